"""Errors raised by the tickd client.

TickdError and its subclasses are the daemon's answers: a JSON-RPC error
object, one class per code tickd uses (README "Protocol").  The others are
about the connection: Timeout (no answer in time), ConnectionClosed (the
connection ended), CannotConnect (no daemon on that socket) and ProtocolError
(the peer sent something that is not JSON-RPC).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class TickdError(Exception):
    """An error response from tickd: .code, .message, .data (or None).

    .method is the method of the request it answers (None for an error that
    answers a whole line, such as a batch too long)."""

    code: Optional[int] = None

    def __init__(self, code: int, message: str, data: Any = None, method: Optional[str] = None):
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    def __str__(self) -> str:
        where = f" ({self.method})" if self.method else ""
        return f"error {self.code}{where}: {self.message}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
                f"data={self.data!r}, method={self.method!r})")


class ParseError(TickdError):
    """-32700: the line was not JSON."""
    code = -32700


class InvalidRequest(TickdError):
    """-32600: not a JSON-RPC request (an empty batch, a bad envelope)."""
    code = -32600


class MethodNotFound(TickdError):
    """-32601: no such method."""
    code = -32601


class InvalidParams(TickdError):
    """-32602: a parameter is unknown, of the wrong type or out of range."""
    code = -32602


class InternalError(TickdError):
    """-32603: the daemon failed to carry out a valid request."""
    code = -32603


class NotFound(TickdError):
    """-32001: an entity, level, timer, tickable or component does not exist."""
    code = -32001


class InvalidState(TickdError):
    """-32002: not now (world.step while not paused, a load already running)."""
    code = -32002


class LimitExceeded(TickdError):
    """-32003: a limit (entities, clients, line length, batch size, pending calls)."""
    code = -32003


class ShuttingDown(TickdError):
    """-32004: the daemon is shutting down."""
    code = -32004


class ReadOnly(TickdError):
    """-32005: the method is not allowed on the read-only socket."""
    code = -32005


ERRORS: Dict[int, Type[TickdError]] = {
    cls.code: cls
    for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError,
                NotFound, InvalidState, LimitExceeded, ShuttingDown, ReadOnly)
}


def error_from_response(error: Any, method: Optional[str] = None) -> TickdError:
    """The TickdError (subclass by code) for a response's "error" member."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) \
            or isinstance(error.get("code"), bool):
        raise ProtocolError(f"malformed error object: {error!r}")
    code = error["code"]
    message = error.get("message")
    if not isinstance(message, str):
        message = str(message)
    cls = ERRORS.get(code, TickdError)
    return cls(code, message, error.get("data"), method)


class Timeout(TimeoutError):
    """No answer (or no event) within the timeout.  A timed-out call is not
    cancelled in the daemon: it still runs, and its late answer is dropped."""


class ConnectionClosed(ConnectionError):
    """The connection ended (the daemon closed it, or Client.close() was called)
    before the answer came."""


class CannotConnect(ConnectionError):
    """Nothing answers on the socket path (.filename): errno and strerror say why."""


class ProtocolError(Exception):
    """The peer sent a line that is not a JSON-RPC 2.0 response or notification."""
