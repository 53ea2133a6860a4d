"""tickd: a client for the tickd control socket (JSON-RPC 2.0 over a Unix socket).

    import tickd
    with tickd.Client() as c:                  # $TICKD_SOCKET, run/tickd.sock, ...
        ids = c.call("entity.spawn", class_="mover", count=3)["ids"]
        c.batch([("world.pause",), ("world.step", {"frames": 2})])
        for ev in c.subscribe("frame", timeout=5):
            print(ev.params["frame"])

Standard library only.  See the README's "Clients" section.
"""

from .client import (ACTIVATED_SOCKET, ANSWERED_LATER, LOCAL_SOCKET, SYSTEM_SOCKET, Client, Event,
                     Pending, Subscription, resolve_socket)
from .errors import (ERRORS, CannotConnect, ConnectionClosed, InternalError, InvalidParams,
                     InvalidRequest, InvalidState, LimitExceeded, MethodNotFound, NotFound,
                     ParseError, ProtocolError, ReadOnly, ShuttingDown, TickdError, Timeout,
                     error_from_response)

__version__ = "0.1.0"

__all__ = [
    "Client", "Event", "Pending", "Subscription", "resolve_socket",
    "LOCAL_SOCKET", "ACTIVATED_SOCKET", "SYSTEM_SOCKET", "ANSWERED_LATER",
    "TickdError", "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams",
    "InternalError", "NotFound", "InvalidState", "LimitExceeded", "ShuttingDown", "ReadOnly",
    "ERRORS", "error_from_response",
    "Timeout", "ConnectionClosed", "CannotConnect", "ProtocolError",
]
