"""A stand-in for Agones' SDK server (the sidecar's REST gateway), for
testing tickd without a Kubernetes cluster.

Agones' own sdk-server cannot run where `make check` runs, so this
implements, with the standard library only (http.server, threading), the
stable SDK's REST endpoints as Agones documents them (sdks/swagger/
sdk.swagger.json; agones.dev "REST Game Server Client API"):

    POST /ready /health /shutdown /allocate    body {}
    POST /reserve                              body {"seconds": "N"}
    GET  /gameserver                           a GameServer object
    GET  /watch/gameserver                     chunked; one {"result": GameServer}
                                               JSON line per update, the
                                               current one first
    PUT  /metadata/label /metadata/annotation  body {"key", "value"}; stored
                                               as "agones.dev/sdk-" + key

and the GameServer's state machine as the SDK server and the controller
drive it: Scheduled, then RequestReady on /ready and Ready a moment later
(the controller's part); Allocated on /allocate; Reserved on /reserve, back
to Ready after the seconds (0: no timer); Shutdown on /shutdown; Unhealthy
when health pings stop: from Ready on, every `health_period` seconds a check
counts a failure if no ping came within the period, and `failure_threshold`
failures in a row make the GameServer Unhealthy (Agones' checkHealth /
healthy).  Unhealthy and Shutdown are final: later calls are answered but
change nothing.

Every call is recorded (time, method, path, headers, body).  For the tests'
adversities it can start late (start() when the test wants), refuse (stop():
nothing listens), fail (answer 500, grpc-gateway's error shape) or stall
(read the request and never answer) for chosen paths, stream the watch in
small slow pieces, and inject arbitrary bytes into open watch streams.

As a program, for trying tickd by hand:
    python3 tests/python/agones_standin.py --port 9358 [--health-period 5]
        [--failure-threshold 3]
prints each call as a JSON line; then AGONES_SDK_HTTP_PORT=9358 build/tickd.
"""

import argparse
import http.server
import json
import socket
import sys
import threading
import time

PREFIX = "agones.dev/sdk-"
FINAL = ("Unhealthy", "Shutdown")


class Call:
    """One request as the stand-in received it."""

    def __init__(self, method, path, headers, raw):
        self.t = time.monotonic()
        self.method = method
        self.path = path
        self.headers = headers
        self.raw = raw
        try:
            self.body = json.loads(raw) if raw else None
        except ValueError:
            self.body = None
        self.fault = None  # what the stand-in did instead of answering

    def __repr__(self):
        return f"<{self.method} {self.path} {self.raw!r} {self.fault or ''}>"


class Standin:
    """The SDK server.  port 0 picks a free port (kept across stop/start)."""

    def __init__(self, port=0, health_period=5.0, failure_threshold=3, initial_delay=0.0,
                 controller_delay=0.01, name="gs-standin-1", on_call=None):
        self.port = port
        self.health_period = health_period
        self.failure_threshold = failure_threshold
        self.initial_delay = initial_delay
        self.controller_delay = controller_delay
        self.name = name
        self.on_call = on_call          # called with each Call (from its thread)
        self.cond = threading.Condition()
        self.calls = []
        self.state = "Scheduled"
        self.history = ["Scheduled"]    # every state the GameServer went through
        self.labels = {}
        self.annotations = {}
        self.version = 0                # bumped on every GameServer update
        self.faults = []                # [kind, paths or None, count or None]
        self.slow_watch = None          # (piece bytes, seconds between pieces)
        self.injected = []              # raw bytes for watch streams: (bytes, piece, pause)
        self.watch_sent = -1            # the version the last watch line carried
        self.on_ready = None            # called in /ready's thread before it answers
        self._server = None
        self._thread = None
        self._stopping = threading.Event()
        self._released = 0              # release_stalls() calls so far
        self._health_thread = None
        self._last_ping = None
        self._failures = 0
        self._reserve_timer = None
        self._conns = set()

    # ---- control of the stand-in -------------------------------------------------

    def start(self):
        """Listen (again) on self.port and serve in threads."""
        self._stopping.clear()
        standin = self

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], OSError):
                    super().handle_error(request, client_address)
                # a client that went away mid-answer (tickd dropped a stream)

            def get_request(self):
                conn, addr = super().get_request()
                with standin.cond:
                    standin._conns.add(conn)
                return conn, addr

        self._server = Server(("127.0.0.1", self.port), _handler(self))
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop listening and drop every connection (stalled ones too):
        afterwards connections are refused."""
        self._stopping.set()
        with self.cond:
            self.cond.notify_all()
            conns = list(self._conns)
            self._conns.clear()
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        if self._reserve_timer:
            self._reserve_timer.cancel()

    def fault(self, kind, paths=None, count=None):
        """From now on, answer calls to `paths` (None: every path) with `kind`:
        "fail" (HTTP 500) or "stall" (never answer, until release_stalls() or
        stop()), `count` times (None: until clear_faults())."""
        assert kind in ("fail", "stall")
        with self.cond:
            self.faults.append([kind, tuple(paths) if paths else None, count])

    def clear_faults(self):
        with self.cond:
            self.faults.clear()

    def release_stalls(self):
        """Let the calls stalled so far go on (they are then answered
        normally); later calls stall again while the fault holds."""
        with self.cond:
            self._released += 1
            self.cond.notify_all()

    def set_state(self, state):
        """A change made outside the game server (a GameServerAllocation, the
        controller): watchers see it as they would."""
        with self.cond:
            self._set_state(state, external=True)

    def inject(self, raw, piece=None, pause=0.0):
        """Send raw bytes on every open watch stream, as they are (after any
        GameServer update due), in chunks of `piece` bytes `pause` seconds
        apart (None: one chunk)."""
        with self.cond:
            self.injected.append((raw, piece, pause))
            self.cond.notify_all()

    def calls_to(self, path, method=None):
        with self.cond:
            return [c for c in self.calls if c.path == path and (not method or c.method == method)]

    def wait(self, predicate, timeout, what="the condition"):
        """Wait until predicate() (called under the lock) holds; AssertionError
        after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"stand-in: {what} not reached in {timeout:.1f} s; "
                                         f"state {self.state}, calls {self.calls[-12:]}")
                self.cond.wait(min(left, 0.05))

    # ---- the GameServer --------------------------------------------------------------

    def gameserver(self):
        return {
            "object_meta": {
                "name": self.name, "namespace": "default", "uid": "0b1c2d3e-standin",
                "resource_version": str(self.version), "generation": "1",
                "creation_timestamp": "1767225600",
                "labels": dict(self.labels), "annotations": dict(self.annotations),
            },
            "spec": {"health": {"disabled": False, "period_seconds": self.health_period,
                                "failure_threshold": self.failure_threshold,
                                "initial_delay_seconds": self.initial_delay}},
            "status": {"state": self.state, "address": "127.0.0.1",
                       "ports": [{"name": "default", "port": 7777}]},
        }

    def _set_state(self, state, external=False):
        """Under the lock."""
        if self.state in FINAL and not external:
            return
        if state == self.state:
            self.version += 1  # an update all the same (Agones re-sends)
            self.cond.notify_all()
            return
        self.state = state
        self.history.append(state)
        self.version += 1
        self.cond.notify_all()
        if state == "Ready" and self._health_thread is None:
            self._last_ping = time.monotonic() + self.initial_delay
            self._health_thread = threading.Thread(target=self._check_health, daemon=True)
            self._health_thread.start()

    def _later(self, seconds, fn):
        t = threading.Timer(seconds, fn)
        t.daemon = True
        t.start()
        return t

    def _check_health(self):
        """Agones' health checking: one check per period from Ready on."""
        while not self._stopping.wait(self.health_period):
            with self.cond:
                if self.state in FINAL:
                    return
                if time.monotonic() - self._last_ping > self.health_period:
                    self._failures += 1
                if self._failures >= self.failure_threshold:
                    self._set_state("Unhealthy")

    # ---- requests --------------------------------------------------------------------

    def _fault_for(self, path):
        """Under the lock: the fault this call gets, if any."""
        for f in self.faults:
            kind, paths, count = f
            if paths is not None and path not in paths:
                continue
            if count is not None:
                if count <= 0:
                    continue
                f[2] -= 1
            return kind
        return None

    def _handle(self, h, method):
        path = h.path.split("?", 1)[0]
        n = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(n) if n > 0 else b""
        call = Call(method, path, dict(h.headers.items()), raw.decode("utf-8", "replace"))
        with self.cond:
            self.calls.append(call)
            call.fault = self._fault_for(path)
            released = self._released
            self.cond.notify_all()
        if self.on_call:
            self.on_call(call)
        if call.fault == "stall":
            with self.cond:
                while not self._stopping.is_set() and self._released == released:
                    self.cond.wait(0.05)
            if self._stopping.is_set():
                h.close_connection = True
                return
            call.fault = "stalled, then released"
        elif call.fault == "fail":
            return self._reply(h, 500, {"code": 13, "message": "stand-in failure",
                                        "details": []})
        routes = {
            ("POST", "/ready"): self._ready, ("POST", "/health"): self._health,
            ("POST", "/shutdown"): self._shutdown, ("POST", "/allocate"): self._allocate,
            ("POST", "/reserve"): self._reserve, ("GET", "/gameserver"): self._get,
            ("PUT", "/metadata/label"): self._label,
            ("PUT", "/metadata/annotation"): self._annotation,
        }
        if method == "GET" and path == "/watch/gameserver":
            return self._watch(h)
        fn = routes.get((method, path))
        if not fn:
            return self._reply(h, 404 if all(p != path for _, p in routes) else 405,
                               {"code": 5, "message": "Not Found", "details": []})
        if method in ("POST", "PUT") and call.body is None:
            return self._reply(h, 400, {"code": 3, "message": "invalid JSON body",
                                        "details": []})
        status, body = fn(call)
        self._reply(h, status, body)

    def _reply(self, h, status, body):
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _ready(self, call):
        if self.on_ready:
            self.on_ready(call)
        with self.cond:
            if self.state not in FINAL:
                self._set_state("RequestReady")
                self._later(self.controller_delay, lambda: self._controller("RequestReady",
                                                                            "Ready"))
        return 200, {}

    def _controller(self, when, to):
        with self.cond:
            if self.state == when:
                self._set_state(to)

    def _health(self, call):
        with self.cond:
            self._last_ping = time.monotonic()
            self._failures = 0
        return 200, {}

    def _shutdown(self, call):
        with self.cond:
            self._set_state("Shutdown")
        return 200, {}

    def _allocate(self, call):
        with self.cond:
            self._set_state("Allocated")
        return 200, {}

    def _reserve(self, call):
        seconds = call.body.get("seconds", "0") if isinstance(call.body, dict) else None
        try:
            secs = int(seconds)  # the gateway takes int64 as a string or a number
        except (TypeError, ValueError):
            return 400, {"code": 3, "message": "seconds: not an int64", "details": []}
        with self.cond:
            if self._reserve_timer:
                self._reserve_timer.cancel()
                self._reserve_timer = None
            self._set_state("Reserved")
            if secs > 0 and self.state == "Reserved":
                self._reserve_timer = self._later(secs, lambda: self._controller("Reserved",
                                                                                 "Ready"))
        return 200, {}

    def _get(self, call):
        with self.cond:
            return 200, self.gameserver()

    def _meta(self, call, where):
        body = call.body if isinstance(call.body, dict) else {}
        key, value = body.get("key"), body.get("value")
        if not isinstance(key, str) or not isinstance(value, str):
            return 400, {"code": 3, "message": "key and value: strings", "details": []}
        with self.cond:
            where[PREFIX + key] = value
            self.version += 1
            self.cond.notify_all()
        return 200, {}

    def _label(self, call):
        return self._meta(call, self.labels)

    def _annotation(self, call):
        return self._meta(call, self.annotations)

    def _watch(self, h):
        """A chunked stream: the GameServer now, then one line per update
        (and what inject() queues), until the client or the stand-in goes."""
        with self.cond:  # before the headers: what comes after them is sent
            seen = self.version
            line = json.dumps({"result": self.gameserver()}).encode() + b"\n"
            injected_seen = len(self.injected)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.close_connection = True
        try:
            self._send_chunks(h, line)
            with self.cond:
                self.watch_sent = seen
                self.cond.notify_all()
            while not self._stopping.is_set():
                with self.cond:
                    while (self.version == seen and len(self.injected) == injected_seen
                           and not self._stopping.is_set()):
                        self.cond.wait(0.1)
                    if self._stopping.is_set():
                        return
                    raw = self.injected[injected_seen:]
                    injected_seen = len(self.injected)
                    update = None
                    if self.version != seen:
                        seen = self.version
                        update = json.dumps({"result": self.gameserver()}).encode() + b"\n"
                if update:
                    self._send_chunks(h, update)
                    with self.cond:
                        self.watch_sent = seen
                        self.cond.notify_all()
                for data, piece, pause in raw:
                    self._send_chunks(h, data, piece, pause)
        except OSError:
            return  # the client went away

    def _send_chunks(self, h, data, piece=None, pause=0.0):
        if piece is None:
            piece, pause = self.slow_watch or (len(data), 0)
        for i in range(0, len(data), piece):
            part = data[i:i + piece]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            h.wfile.flush()
            if pause:
                time.sleep(pause)


def _handler(standin):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_GET(self):
            standin._handle(self, "GET")

        def do_POST(self):
            standin._handle(self, "POST")

        def do_PUT(self):
            standin._handle(self, "PUT")

        def finish(self):
            try:
                super().finish()
            finally:
                with standin.cond:
                    standin._conns.discard(self.connection)
    return Handler


def main():
    p = argparse.ArgumentParser(description="A stand-in for Agones' SDK server (REST).")
    p.add_argument("--port", type=int, default=9358)
    p.add_argument("--health-period", type=float, default=5.0)
    p.add_argument("--failure-threshold", type=int, default=3)
    p.add_argument("--initial-delay", type=float, default=0.0)
    a = p.parse_args()

    def show(call):
        print(json.dumps({"t": round(call.t, 3), "method": call.method, "path": call.path,
                          "body": call.body if call.body is not None else call.raw}),
              flush=True)
    s = Standin(port=a.port, health_period=a.health_period,
                failure_threshold=a.failure_threshold, initial_delay=a.initial_delay,
                on_call=show).start()
    print(f"stand-in SDK server on 127.0.0.1:{s.port}; AGONES_SDK_HTTP_PORT={s.port}",
          file=sys.stderr, flush=True)
    last = None
    try:
        while True:
            with s.cond:
                s.cond.wait(0.5)
                if s.state != last:
                    print(json.dumps({"state": s.state}), flush=True)
                    last = s.state
    except KeyboardInterrupt:
        s.stop()


if __name__ == "__main__":
    main()
