"""The tickd control-socket client: JSON-RPC 2.0, one JSON text per line, over a
Unix stream socket.

One Client is one connection.  Every call gets its own id; the client reads
until the response with that id arrives, keeping what else came meanwhile:
answers to other calls (answered-later methods such as world.step answer out
of order), and notifications (`event.<topic>` after events.subscribe), which go
to the Subscription that asked for the topic.

A Client may be shared by threads: one thread at a time reads the socket and
hands each message to whoever waits for it, so a thread iterating a
Subscription and another making calls on the same Client both progress.  A
separate Client per concern (one for events, one for calls) is simpler still.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import os
import select
import socket
import threading
import time
from typing import (Any, Callable, Deque, Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union)

from .errors import (CannotConnect, ConnectionClosed, ProtocolError, ShuttingDown, TickdError,
                     Timeout, error_from_response)

# The socket fallbacks of tickctl (src/cli/tickctl.c, resolve_socket).
LOCAL_SOCKET = "run/tickd.sock"          # make run, relative to the working directory
ACTIVATED_SOCKET = "/run/tickd.sock"     # systemd/tickd.socket
SYSTEM_SOCKET = "/run/tickd/tickd.sock"  # the service's own socket

# Methods that answer when done rather than in request order (PROTOCOL.md).
# Only used to tell which outstanding line an error with id null answers.
ANSWERED_LATER = frozenset({"world.step", "engine.sprint", "world.trace", "engine.profile",
                            "world.save", "world.load"})

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_EVENTS = 100_000

_DEFAULT: Any = object()  # "the client's timeout", distinct from None ("wait forever")
_RECV_SIZE = 1 << 20


def resolve_socket(path: Union[str, os.PathLike, None] = None) -> str:
    """The socket path tickctl would use: `path`, else $TICKD_SOCKET (when not
    empty), else run/tickd.sock if it exists (or cannot be checked), else
    /run/tickd.sock if it exists (socket activation), else /run/tickd/tickd.sock."""
    if path is not None and os.fspath(path) != "":
        return os.fspath(path)
    env = os.environ.get("TICKD_SOCKET")
    if env:
        return env
    try:
        os.stat(LOCAL_SOCKET)
        return LOCAL_SOCKET
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:
        return LOCAL_SOCKET  # unreadable run/: name it, connect reports the real error
    if os.path.exists(ACTIVATED_SOCKET):
        return ACTIVATED_SOCKET
    return SYSTEM_SOCKET


class Event(NamedTuple):
    """One notification `event.<topic>`: its topic and its params."""
    topic: str
    params: Dict[str, Any]


Call = Union[str, Tuple[str], Tuple[str, Optional[Mapping[str, Any]]], Mapping[str, Any]]


def _params(params: Optional[Mapping[str, Any]], kwparams: Dict[str, Any]) -> Optional[dict]:
    """params and keyword parameters merged; a keyword's trailing underscore is
    dropped (class_="mover" is "class").  None when there are none."""
    if params is None and not kwparams:
        return None
    if params is None:
        out: dict = {}
    elif isinstance(params, Mapping):
        out = dict(params)
    else:
        raise TypeError("params must be a mapping: tickd takes parameters by name, "
                        f"not {type(params).__name__}")
    for name, value in kwparams.items():
        out[name[:-1] if name.endswith("_") else name] = value
    return out


def _encode(message: Any) -> bytes:
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            + "\n").encode("utf-8")


def _deadline(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None else time.monotonic() + max(0.0, timeout)


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else deadline - time.monotonic()


def _poll_ms(remaining: Optional[float]) -> Optional[int]:
    return None if remaining is None else max(0, math.ceil(remaining * 1000))


def _result(message: Any, method: Optional[str]) -> Any:
    """A response's result, or its error raised."""
    if not isinstance(message, dict):
        raise ProtocolError(f"expected one response to {method}, got {message!r:.200}")
    if "error" in message:
        raise error_from_response(message["error"], method)
    return message.get("result")


class _Line:
    """A request line sent and not answered yet."""
    __slots__ = ("methods", "ids", "abandoned", "later")

    def __init__(self, methods: List[str], ids: List[int]):
        self.methods = methods
        self.ids = ids
        self.abandoned = False
        self.later = any(m in ANSWERED_LATER for m in methods)


class Pending:
    """A call (or batch) sent whose answer may not have come yet."""

    def __init__(self, client: "Client", key: int, convert: Callable[[Any], Any]):
        self._client = client
        self._key = key
        self._convert = convert
        self._answer: Any = None
        self._have = False

    @property
    def id(self) -> int:
        """The request id (a batch: its first member's)."""
        return self._key

    def done(self) -> bool:
        """True once the answer has arrived (reads what is already there)."""
        if self._have:
            return True
        try:
            self._answer = self._client._collect(self._key, time.monotonic(), abandon=False,
                                                 timeout=0.0)
        except Timeout:
            return False
        self._have = True
        return True

    def result(self, timeout: Optional[float] = _DEFAULT) -> Any:
        """Wait for the answer (at most `timeout` seconds; None: forever;
        default: the client's) and return the result, or raise its error.  A
        Timeout here leaves the call pending: result() may be asked again."""
        if not self._have:
            if timeout is _DEFAULT:
                timeout = self._client.timeout
            self._answer = self._client._collect(self._key, _deadline(timeout), abandon=False,
                                                 timeout=timeout)
            self._have = True
        return self._convert(self._answer)

    def abandon(self) -> None:
        """Stop waiting: its answer, when it comes, is dropped."""
        if not self._have:
            self._client._abandon(self._key)


class Subscription:
    """Events of some topics on one Client, as an iterator of Event.

    Iteration waits for the next event (at most `timeout` seconds each, None:
    forever, raising Timeout), and stops when the connection ends or the
    subscription is closed.  Events wait in a bounded queue (Client
    max_events); past it the oldest are dropped and counted in .dropped."""

    def __init__(self, client: "Client", topics: Tuple[str, ...], timeout: Optional[float]):
        self.client = client
        self.topics = topics
        self.timeout = timeout
        self.dropped = 0
        self._queue: Deque[Event] = collections.deque()
        self._closed = False

    def _push(self, event: Event) -> None:
        if len(self._queue) >= self.client.max_events:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(event)

    def _pop(self) -> Optional[Event]:
        return self._queue.popleft() if self._queue else None

    def get(self, timeout: Optional[float] = _DEFAULT) -> Event:
        """The next event.  Raises Timeout when none came in `timeout` seconds
        (default: the subscription's), ConnectionClosed when the connection
        ended (or the subscription was closed) and every event received was
        taken."""
        if self._closed:
            raise ConnectionClosed("the subscription was closed")
        if timeout is _DEFAULT:
            timeout = self.timeout
        try:
            return self.client._pump(self._pop, _deadline(timeout))
        except Timeout:
            topics = ", ".join(self.topics)
            raise Timeout(f"no event ({topics}) within {timeout:g} s") from None

    def pending(self) -> int:
        """Events received and not taken yet."""
        return len(self._queue)

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._closed and not self._queue:
            raise StopIteration
        try:
            return self.get()
        except ConnectionClosed:
            raise StopIteration from None

    def close(self) -> None:
        """Unsubscribe from the topics no other Subscription of this Client
        still wants (events.unsubscribe), and end the iteration."""
        if self._closed:
            return
        drop = self.client._unregister(self)
        self._closed = True
        self._queue.clear()
        if drop:
            try:
                self.client.call("events.unsubscribe", topics=drop)
            except (ConnectionClosed, ShuttingDown):
                pass  # no events will come anyway

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Client:
    """A connection to tickd.

    socket_path: as tickctl (see resolve_socket).  timeout: seconds a call
    waits for its answer by default (None: forever); answered-later calls
    such as a long engine.sprint may need more (request(..., timeout=None)).
    max_events: bound of each event queue (see Subscription).
    """

    def __init__(self, socket_path: Union[str, os.PathLike, None] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_events: int = DEFAULT_MAX_EVENTS):
        self.socket_path = resolve_socket(socket_path)
        self.timeout = timeout
        self.max_events = max_events
        # Notifications other than events, and responses that answer no
        # request of this client (bounded: the oldest go first).
        self.unsolicited: Deque[Any] = collections.deque(maxlen=max_events)
        # Events of topics no Subscription of this client holds (those sent
        # before an unsubscribe took effect), dropped.
        self.events_unclaimed = 0
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._reading = False           # a thread is reading the socket
        self._lines: Dict[int, _Line] = {}
        self._order: Deque[int] = collections.deque()  # keys of _lines, in send order
        self._member: Dict[int, int] = {}              # batch member id -> line key
        self._answers: Dict[int, Any] = {}
        self._subs: List[Subscription] = []
        self._buf = bytearray()
        self._scan = 0
        self._closed: Optional[BaseException] = None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(timeout)
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            why = e.strerror or str(e) or type(e).__name__
            raise CannotConnect(e.errno, f"cannot connect to tickd: {why}",
                                self.socket_path) from None
        sock.setblocking(False)
        self._sock: Optional[socket.socket] = sock
        self._poll_in = select.poll()
        self._poll_in.register(sock.fileno(), select.POLLIN)
        self._poll_out = select.poll()
        self._poll_out.register(sock.fileno(), select.POLLOUT)

    def __repr__(self) -> str:
        state = "closed" if self._closed is not None else "open"
        return f"<tickd.Client {self.socket_path!r} {state}>"

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- calls ---------------------------------------------------------------------

    def call(self, method: str, params: Optional[Mapping[str, Any]] = None, /,
             **kwparams: Any) -> Any:
        """Call `method` with params (a mapping and/or keywords; `class_=` is
        "class") and return its result, or raise its TickdError.  Waits the
        client's timeout; answered-later methods wait until they are done."""
        return self.request(method, _params(params, kwparams))

    def request(self, method: str, params: Optional[Mapping[str, Any]] = None, *,
                timeout: Optional[float] = _DEFAULT) -> Any:
        """call() with params as one mapping and a timeout of its own (seconds,
        None: forever).  On Timeout the call is abandoned (it still runs in the
        daemon; its answer is dropped)."""
        if timeout is _DEFAULT:
            timeout = self.timeout
        deadline = _deadline(timeout)
        key, _ = self._send_calls([(method, _params(params, {}))], batch=False, deadline=deadline)
        return _result(self._collect(key, deadline, abandon=True, timeout=timeout), method)

    def submit(self, method: str, params: Optional[Mapping[str, Any]] = None, /,
               **kwparams: Any) -> Pending:
        """Send a call and return at once: Pending.result() waits for it.  Other
        calls may be made meanwhile (world.step, then world.step_stop)."""
        key, _ = self._send_calls([(method, _params(params, kwparams))], batch=False,
                               deadline=_deadline(self.timeout))
        return Pending(self, key, lambda answer: _result(answer, method))

    def batch(self, calls: Iterable[Call], *, timeout: Optional[float] = _DEFAULT) -> List[Any]:
        """Send calls as one JSON-RPC batch; return their results in order, an
        error in the place of a call that failed (a TickdError instance, not
        raised).  A call is "method", (method,), (method, params) or
        {"method", "params"}.  The batch answers when all its calls did (one
        answered later makes the whole batch wait).  An error for the whole
        batch (empty, too long) is raised."""
        if timeout is _DEFAULT:
            timeout = self.timeout
        deadline = _deadline(timeout)
        items = [self._norm_call(c) for c in calls]
        key, ids = self._send_calls(items, batch=True, deadline=deadline)
        answer = self._collect(key, deadline, abandon=True, timeout=timeout)
        return self._batch_results(items, ids, answer)

    def submit_batch(self, calls: Iterable[Call]) -> Pending:
        """batch() without waiting: Pending.result() returns the list."""
        items = [self._norm_call(c) for c in calls]
        key, ids = self._send_calls(items, batch=True, deadline=_deadline(self.timeout))
        return Pending(self, key, lambda answer: self._batch_results(items, ids, answer))

    def notify(self, method: str, params: Optional[Mapping[str, Any]] = None, /,
               **kwparams: Any) -> None:
        """Send a JSON-RPC notification: the call runs, nothing is answered,
        not even an error."""
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        p = _params(params, kwparams)
        if p is not None:
            message["params"] = p
        self._send(_encode(message), _deadline(self.timeout))

    # ---- events --------------------------------------------------------------------

    def subscribe(self, topics: Union[str, Sequence[str]], *,
                  timeout: Optional[float] = None) -> Subscription:
        """events.subscribe to `topics` ("frame", ["frame", "overrun"], ...) and
        return the Subscription: an iterator of Event(topic, params).
        `timeout`: the longest wait for one event while iterating (None:
        forever)."""
        if isinstance(topics, str):
            topics = [topics]
        topics = tuple(topics)
        sub = Subscription(self, topics, timeout)
        with self._cond:
            self._subs.append(sub)  # before the call: no event slips past
        try:
            self.call("events.subscribe", topics=list(topics))
        except BaseException:
            self._unregister(sub)
            sub._closed = True
            raise
        return sub

    # ---- the connection ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def close(self) -> None:
        """Close the connection.  Calls still waiting raise ConnectionClosed."""
        with self._cond:
            sock = self._sock
            if sock is None:
                return
            if self._closed is None:
                self._closed = ConnectionClosed("the client was closed")
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread polling it
            except OSError:
                pass
            while self._reading:
                self._cond.wait()
            self._sock = None
            self._cond.notify_all()
        with self._send_lock:
            sock.close()

    # ---- internals -----------------------------------------------------------------

    @staticmethod
    def _norm_call(c: Call) -> Tuple[str, Optional[dict]]:
        if isinstance(c, str):
            return c, None
        if isinstance(c, Mapping):
            extra = set(c) - {"method", "params"}
            if "method" not in c or extra:
                raise ValueError(f"a call as a mapping has 'method' and 'params' only: {c!r}")
            return c["method"], _params(c.get("params"), {})
        if isinstance(c, (tuple, list)) and 1 <= len(c) <= 2 and isinstance(c[0], str):
            return c[0], _params(c[1] if len(c) == 2 else None, {})
        raise ValueError(f"a call is 'method', (method,), (method, params) or "
                         f"{{'method', 'params'}}: {c!r}")

    def _send_calls(self, items: List[Tuple[str, Optional[dict]]], batch: bool,
                    deadline: Optional[float]) -> Tuple[int, List[int]]:
        """Send one line (one request, or a batch); return its key and ids."""
        ids = [next(self._ids) for _ in items]
        key = ids[0] if ids else next(self._ids)
        requests = []
        for (method, params), rid in zip(items, ids):
            if not isinstance(method, str):
                raise TypeError(f"method must be a string, not {type(method).__name__}")
            r: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
            if params is not None:
                r["params"] = params
            requests.append(r)
        data = _encode(requests if batch else requests[0])
        with self._cond:
            self._lines[key] = _Line([m for m, _ in items], ids)
            self._order.append(key)
            if batch:
                for rid in ids:
                    self._member[rid] = key
        try:
            self._send(data, deadline)
        except BaseException:
            with self._cond:
                self._forget(key)
            raise
        return key, ids

    def _send(self, data: bytes, deadline: Optional[float]) -> None:
        view = memoryview(data)
        sent = 0
        with self._send_lock:
            while sent < len(data):
                sock = self._sock
                if self._closed is not None or sock is None:
                    raise ConnectionClosed(str(self._closed))
                try:
                    sent += sock.send(view[sent:], socket.MSG_NOSIGNAL)
                    continue
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as e:
                    self._fail(ConnectionClosed(f"connection to tickd lost: {e}"))
                    raise ConnectionClosed(str(self._closed)) from None
                rem = _remaining(deadline)
                if rem is not None and rem <= 0:
                    if sent:
                        # Half a line went out: the stream cannot be resumed.
                        self._fail(ConnectionClosed("connection closed: a request line was "
                                                    "cut short by a timeout"))
                    raise Timeout("tickd did not take the request within the timeout")
                self._poll_out.poll(_poll_ms(rem))

    def _collect(self, key: int, deadline: Optional[float], abandon: bool,
                 timeout: Optional[float]) -> Any:
        """Wait for line `key`'s answer until `deadline` (`timeout` names it in
        the error).  On Timeout, forget the line if `abandon`."""
        try:
            return self._pump(lambda: self._answers.pop(key, None), deadline)
        except Timeout:
            if abandon:
                self._abandon(key)
            raise Timeout(f"no answer from tickd within {timeout:g} s") from None

    def _abandon(self, key: int) -> None:
        with self._cond:
            line = self._lines.get(key)
            if line is not None:
                line.abandoned = True
            self._answers.pop(key, None)

    def _pump(self, ready: Callable[[], Any], deadline: Optional[float]) -> Any:
        """Read and dispatch until ready() (called under the lock) returns
        something other than None, and return it.  Raises Timeout at the
        deadline (after one attempt at least), ConnectionClosed when the
        connection ended first."""
        tried = False
        with self._cond:
            while True:
                value = ready()
                if value is not None:
                    return value
                if self._closed is not None:
                    if isinstance(self._closed, ProtocolError):
                        raise ProtocolError(str(self._closed))
                    raise ConnectionClosed(str(self._closed))
                rem = _remaining(deadline)
                if rem is not None and rem <= 0 and tried:
                    raise Timeout("timed out")
                tried = True
                if self._reading:  # another thread reads: it hands us ours
                    if rem is not None and rem <= 0:
                        raise Timeout("timed out")
                    self._cond.wait(rem)
                    continue
                self._reading = True
                self._cond.release()
                try:
                    chunk = self._recv(rem)
                finally:
                    self._cond.acquire()
                    self._reading = False
                    self._cond.notify_all()
                self._feed(chunk)

    def _recv(self, remaining: Optional[float]) -> Union[bytes, None, OSError]:
        """Bytes read (b"" at end of stream), None if none came in time, or the
        error.  Called without the lock, by the one reading thread."""
        sock = self._sock
        if sock is None:
            return b""
        try:
            if not self._poll_in.poll(_poll_ms(remaining)):
                return None
            return sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as e:
            return e

    def _feed(self, chunk: Union[bytes, None, OSError]) -> None:
        """Split what was read into lines and dispatch them (under the lock)."""
        if chunk is None:
            return
        if isinstance(chunk, OSError):
            self._fail(ConnectionClosed(f"connection to tickd lost: {chunk}"))
            return
        if not chunk:
            self._fail(ConnectionClosed("tickd closed the connection"))
            return
        buf = self._buf
        buf += chunk
        start = 0
        pos = self._scan
        try:
            while True:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                line = bytes(buf[start:nl])
                start = pos = nl + 1
                if line.strip():
                    self._dispatch(line)
        except ProtocolError as e:
            self._fail(e)
        finally:
            del buf[:start]
            self._scan = len(buf)
            self._cond.notify_all()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as e:
            raise ProtocolError(f"tickd sent a line that is not JSON ({e}): {line[:200]!r}")
        if isinstance(message, list):
            key = None
            for m in message:
                if isinstance(m, dict) and m.get("id") in self._member:
                    key = self._member[m["id"]]
                    break
            self._answer(key if key is not None else self._null_key(), message)
            return
        if not isinstance(message, dict):
            raise ProtocolError(f"tickd sent neither a response nor a notification: {line[:200]!r}")
        if "method" in message and "id" not in message:
            self._notification(message)
            return
        if "result" not in message and "error" not in message:
            raise ProtocolError(f"tickd sent a response without result or error: {line[:200]!r}")
        rid = message.get("id")
        if rid is None:
            self._answer(self._null_key(), message)
        elif isinstance(rid, int) and rid in self._lines:
            self._answer(rid, message)
        elif isinstance(rid, int) and rid in self._member:
            self._answer(self._member[rid], message)
        else:
            self.unsolicited.append(message)

    def _null_key(self) -> Optional[int]:
        """The line an error with id null answers: errors found while reading
        take their place in the order of responses, which only answered-later
        calls leave; so the oldest outstanding line that holds none of those,
        else the oldest."""
        for key in self._order:
            if not self._lines[key].later:
                return key
        return self._order[0] if self._order else None

    def _answer(self, key: Optional[int], message: Any) -> None:
        line = self._lines.get(key) if key is not None else None
        if line is None:
            self.unsolicited.append(message)
            return
        self._forget(key)
        if not line.abandoned:
            self._answers[key] = message

    def _forget(self, key: int) -> None:
        line = self._lines.pop(key, None)
        if line is None:
            return
        try:
            self._order.remove(key)
        except ValueError:
            pass
        for rid in line.ids:
            self._member.pop(rid, None)

    def _notification(self, message: Dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        if isinstance(method, str) and method.startswith("event."):
            event = Event(method[len("event."):], params if isinstance(params, dict) else {})
            taken = False
            for sub in self._subs:
                if event.topic in sub.topics:
                    sub._push(event)
                    taken = True
            if not taken:  # sent before an unsubscribe took effect
                self.events_unclaimed += 1
            return
        self.unsolicited.append(message)

    def _unregister(self, sub: Subscription) -> List[str]:
        """Remove `sub`; return its topics that no other subscription holds."""
        with self._cond:
            if sub in self._subs:
                self._subs.remove(sub)
            held = {t for s in self._subs for t in s.topics}
            self._cond.notify_all()
        return [t for t in sub.topics if t not in held]

    def _fail(self, exc: BaseException) -> None:
        """The connection is over: wake everyone waiting."""
        with self._cond:
            if self._closed is None:
                self._closed = exc
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._cond.notify_all()

    @staticmethod
    def _batch_results(items: List[Tuple[str, Optional[dict]]], ids: List[int],
                       answer: Any) -> List[Any]:
        if isinstance(answer, dict):  # one error for the whole batch
            if "error" in answer:
                raise error_from_response(answer["error"], None)
            raise ProtocolError(f"a batch answered by one response: {answer!r:.200}")
        if not isinstance(answer, list):
            raise ProtocolError(f"a batch answered by {answer!r:.200}")
        by_id: Dict[Any, Any] = {}
        for m in answer:
            if isinstance(m, dict):
                by_id[m.get("id")] = m
        out: List[Any] = []
        for (method, _), rid in zip(items, ids):
            m = by_id.get(rid)
            if m is None:
                raise ProtocolError(f"the batch's answer lacks request {rid} ({method})")
            try:
                out.append(_result(m, method))
            except TickdError as e:
                out.append(e)
        return out
