"""The Python client (clients/python) against a real tickd.

Run by tests/python/run_tests.py (make check), or alone from the repository
root: BUILD=build python3 -m unittest discover -s tests/python -v
"""

import contextlib
import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tickd_daemon import ROOT, Daemon, scale  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
import tickd  # noqa: E402

BIG = 1_000_000_000  # the most frames world.step and engine.sprint take


@contextlib.contextmanager
def environ(**changes):
    """os.environ with `changes` (None unsets), restored afterwards."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


class DaemonCase(unittest.TestCase):
    """One daemon for the class (CONFIG edits its config); a client per test."""

    CONFIG = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(cls.CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def setUp(self):
        self.c = self.client()

    def client(self, **kw):
        kw.setdefault("timeout", scale(10.0))
        c = tickd.Client(self.daemon.sock, **kw)
        self.addCleanup(c.close)
        return c

    def pause(self, c=None):
        c = c or self.c
        c.call("world.pause")
        self.addCleanup(self._unpause)

    def _unpause(self):
        with tickd.Client(self.daemon.sock, timeout=scale(10.0)) as c:
            c.call("world.step_stop")
            c.call("engine.sprint_stop")
            c.call("world.unpause")


class Calls(DaemonCase):

    def test_call_returns_the_result(self):
        info = self.c.call("engine.info")
        self.assertEqual(info["name"], "tickd")
        self.assertEqual(info["protocol"], 1)
        self.assertIn("world.step", info["methods"])
        self.assertIn("mover", info["classes"])

    def test_keywords_and_a_mapping_make_the_params(self):
        ids = self.c.call("entity.spawn", class_="mover", count=2, props={"vx": 1.5})["ids"]
        self.assertEqual(len(ids), 2)
        same = self.c.call("entity.spawn", {"class": "mover", "count": 2}, count=1)["ids"]
        self.assertEqual(len(same), 1, "a keyword overrides the mapping")
        got = self.c.call("entity.get", {"id": ids[0]})
        self.assertEqual(got["class"], "mover")
        self.assertEqual(got["props"]["vx"], 1.5)
        self.assertEqual(self.c.request("entity.get", {"id": ids[1]})["id"], ids[1])
        self.assertEqual(self.c.call("entity.destroy", ids=ids + same), {"destroyed": 3})

    def test_params_are_by_name(self):
        with self.assertRaises(TypeError):
            self.c.call("entity.get", [1])
        with self.assertRaises(ValueError):
            self.c.call("world.set_time_dilation", value=float("nan"))
        self.assertIn("frame", self.c.call("world.status"))  # the client is fine

    def test_a_notification_runs_and_answers_nothing(self):
        level = "notified"
        self.c.notify("level.add", name=level)
        self.c.notify("no.such.method")  # not even an error comes back
        names = [lv["name"] for lv in self.c.call("level.list")["levels"]]
        self.assertIn(level, names)
        self.assertEqual(list(self.c.unsolicited), [])
        self.c.call("level.remove", name=level)

    def test_submit_lets_other_calls_pass(self):
        p = self.c.submit("engine.info")
        self.assertEqual(self.c.call("world.status")["paused"], False)
        self.assertTrue(p.done())
        self.assertEqual(p.result()["name"], "tickd")
        self.assertEqual(p.result()["name"], "tickd", "the answer is kept")

    def test_a_shared_client_serves_threads(self):
        errors, counts = [], []

        def work(n):
            try:
                for _ in range(n):
                    ids = self.c.call("entity.spawn", class_="counter")["ids"]
                    self.assertEqual(self.c.call("entity.get", id=ids[0])["id"], ids[0])
                    self.c.call("entity.destroy", ids=ids)
                counts.append(n)
            except Exception as e:  # reported below, in the test's thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(40,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(counts, [40] * 4)

    def test_context_manager_closes(self):
        with tickd.Client(self.daemon.sock) as c:
            c.call("engine.info")
        self.assertTrue(c.closed)
        with self.assertRaises(tickd.ConnectionClosed):
            c.call("engine.info")


class Errors(DaemonCase):
    CONFIG = {"world.max_entities": "10", "control.max_batch": "3",
              "control.readonly_socket": "@DIR@/ro.sock"}

    def check(self, cls, code, fragment, method, params=None):
        with self.assertRaises(cls) as cm:
            self.c.call(method, params or {})
        e = cm.exception
        self.assertIsInstance(e, tickd.TickdError)
        self.assertEqual(e.code, code)
        self.assertEqual(cls.code, code)
        self.assertIn(fragment, e.message)
        self.assertEqual(e.method, method)
        self.assertEqual(str(e), f"error {code} ({method}): {e.message}")
        return e

    def test_method_not_found(self):
        self.check(tickd.MethodNotFound, -32601, "no.such", "no.such")

    def test_invalid_params_name_the_parameter(self):
        self.check(tickd.InvalidParams, -32602, "bogus", "world.status", {"bogus": 1})
        self.check(tickd.InvalidParams, -32602, "count", "entity.spawn",
                   {"class": "counter", "count": -1})
        e = self.check(tickd.InvalidParams, -32602, "class", "entity.spawn", {"class": "nope"})
        self.assertIn("[plugins] load", e.message)

    def test_not_found(self):
        self.check(tickd.NotFound, -32001, "does not exist", "entity.get", {"id": 999999})
        self.check(tickd.NotFound, -32001, "", "timer.get", {"handle": 12345})

    def test_invalid_state(self):
        self.check(tickd.InvalidState, -32002, "paused", "world.step", {"frames": 1})
        self.check(tickd.InvalidState, -32002, "persistent", "level.remove",
                   {"name": "persistent"})

    def test_limit_exceeded(self):
        self.check(tickd.LimitExceeded, -32003, "max_entities", "entity.spawn",
                       {"class": "counter", "count": 11})
        self.assertEqual(self.c.call("entity.list")["total"], 0, "nothing was spawned")

    def test_read_only_socket(self):
        ro = tickd.Client(os.path.join(self.daemon.dir, "ro.sock"))
        self.addCleanup(ro.close)
        self.assertEqual(ro.call("engine.info")["name"], "tickd")
        with self.assertRaises(tickd.ReadOnly) as cm:
            ro.call("entity.spawn", class_="counter")
        self.assertEqual(cm.exception.code, -32005)

    def test_the_client_goes_on_after_errors(self):
        for _ in range(3):
            with self.assertRaises(tickd.TickdError):
                self.c.call("entity.get", id=0)
        self.assertEqual(self.c.call("engine.info")["name"], "tickd")

    def test_codes_and_classes(self):
        self.assertEqual(
            {code: cls.__name__ for code, cls in tickd.ERRORS.items()},
            {-32700: "ParseError", -32600: "InvalidRequest", -32601: "MethodNotFound",
             -32602: "InvalidParams", -32603: "InternalError", -32001: "NotFound",
             -32002: "InvalidState", -32003: "LimitExceeded", -32004: "ShuttingDown",
             -32005: "ReadOnly"})
        other = tickd.error_from_response({"code": -31999, "message": "new", "data": [1]})
        self.assertIs(type(other), tickd.TickdError)
        self.assertEqual((other.code, other.message, other.data), (-31999, "new", [1]))
        with self.assertRaises(tickd.ProtocolError):
            tickd.error_from_response({"message": "no code"})


class Batches(DaemonCase):
    CONFIG = {"control.max_batch": "4"}

    def test_results_and_errors_in_order(self):
        out = self.c.batch([
            ("entity.spawn", {"class": "counter", "count": 2}),
            "no.such",
            {"method": "entity.get", "params": {"id": 999999}},
            ("world.status",),
        ])
        self.assertEqual(len(out), 4)
        self.assertEqual(len(out[0]["ids"]), 2)
        self.assertIsInstance(out[1], tickd.MethodNotFound)
        self.assertEqual(out[1].method, "no.such")
        self.assertIsInstance(out[2], tickd.NotFound)
        self.assertIn("frame", out[3])
        self.c.call("entity.destroy", ids=out[0]["ids"])

    def test_trace_batched_with_step(self):
        self.pause()
        ids = self.c.call("entity.spawn", class_="counter")["ids"]
        self.addCleanup(self.c.call, "entity.destroy", ids=ids)
        trace, step = self.c.batch([("world.trace", {"frames": 2}),
                                    ("world.step", {"frames": 2})])
        self.assertEqual(len(trace["frames"]), 2)
        ran = [t["entity"] for f in trace["frames"] for t in f["ticks"]]
        self.assertEqual(ran, ids * 2, "the counter ticked once in each stepped frame")
        self.assertEqual(step["frame"], trace["frames"][-1]["frame"] + 1,
                         "the frame counter after the traced frames")

    def test_errors_of_the_whole_batch_are_raised(self):
        with self.assertRaises(tickd.InvalidRequest):
            self.c.batch([])
        with self.assertRaises(tickd.LimitExceeded) as cm:
            self.c.batch(["engine.info"] * 5)
        self.assertIn("max_batch", cm.exception.message)
        self.assertEqual(len(self.c.batch(["engine.info"] * 4)), 4)

    def test_an_id_null_error_is_not_taken_for_a_pending_step(self):
        self.pause()
        step = self.c.submit("world.step", frames=BIG)
        with self.assertRaises(tickd.LimitExceeded):
            self.c.batch(["engine.info"] * 5)
        self.assertFalse(step.done())
        self.c.call("world.step_stop")
        self.assertTrue(step.result()["stopped"])

    def test_submit_batch(self):
        p = self.c.submit_batch(["engine.info", ("entity.get", {"id": 999999})])
        info, missing = p.result()
        self.assertEqual(info["name"], "tickd")
        self.assertIsInstance(missing, tickd.NotFound)

    def test_malformed_calls_are_refused_before_sending(self):
        for bad in ([("a", {}, 1)], [42], [{"method": "a", "id": 3}], [(1, {})]):
            with self.assertRaises(ValueError):
                self.c.batch(bad)


class AnsweredLater(DaemonCase):

    def test_world_step_while_paused(self):
        self.pause()
        ids = self.c.call("entity.spawn", class_="counter")["ids"]
        self.addCleanup(self.c.call, "entity.destroy", ids=ids)
        before = self.c.call("entity.get", id=ids[0])["tick"]["ticks"]
        frame = self.c.call("world.step", frames=5)["frame"]
        self.assertEqual(self.c.call("entity.get", id=ids[0])["tick"]["ticks"], before + 5)
        self.assertGreater(frame, 0)

    def test_other_calls_overtake_a_step_and_stop_it(self):
        self.pause()
        step = self.c.submit("world.step", frames=BIG)
        status = self.c.call("world.status")
        self.assertTrue(status["paused"])
        self.assertFalse(step.done())
        self.assertEqual(self.c.call("world.step_stop"), {})
        got = step.result()
        self.assertTrue(got["stopped"])
        self.assertLess(got["frames"], BIG)

    def test_engine_sprint(self):
        got = self.c.call("engine.sprint", frames=200)
        self.assertEqual(got["frames"], 200)
        self.assertGreaterEqual(got["seconds"], 0)
        self.assertIn("p99", got["mspt"])

    def test_sprint_stop_from_another_client(self):
        sprint = self.c.submit("engine.sprint", frames=BIG)
        other = self.client()
        self.assertEqual(other.call("engine.sprint_stop"), {})
        got = sprint.result()
        self.assertTrue(got["stopped"])
        self.assertLess(got["frames"], BIG)


class Subscriptions(DaemonCase):
    CONFIG = {"engine.tick_rate": "200"}

    def test_frame_events(self):
        sub = self.c.subscribe("frame", timeout=scale(10.0))
        events = list(itertools.islice(sub, 5))
        self.assertTrue(all(ev.topic == "frame" for ev in events))
        frames = [ev.params["frame"] for ev in events]
        self.assertEqual(frames, list(range(frames[0], frames[0] + 5)))
        self.assertTrue(all(ev.params["dt"] == 0.01 for ev in events))
        self.assertTrue(all("ms" in ev.params for ev in events))
        topic, params = events[0]
        self.assertEqual((topic, params["frame"]), ("frame", frames[0]))

    def test_events_while_another_client_calls(self):
        got, failed = [], []
        sub = self.c.subscribe(["frame"], timeout=scale(10.0))

        def consume():
            try:
                for ev in sub:
                    got.append(ev.params["frame"])
                    if len(got) == 20:
                        return
            except Exception as e:
                failed.append(e)

        t = threading.Thread(target=consume)
        t.start()
        other = self.client()
        for _ in range(10):
            ids = other.call("entity.spawn", class_="counter")["ids"]
            other.call("entity.destroy", ids=ids)
        t.join()
        self.assertEqual(failed, [])
        self.assertEqual(len(got), 20)

    def test_one_client_shared_by_an_event_thread_and_calls(self):
        got, failed = [], []
        sub = self.c.subscribe("frame", timeout=scale(10.0))

        def consume():
            try:
                got.extend(ev.params["frame"] for ev in itertools.islice(sub, 30))
            except Exception as e:
                failed.append(e)

        t = threading.Thread(target=consume)
        t.start()
        spawned = []
        for _ in range(20):
            spawned += self.c.call("entity.spawn", class_="counter")["ids"]
        t.join()
        self.assertEqual(failed, [])
        self.assertEqual(got, list(range(got[0], got[0] + 30)))
        self.assertEqual(self.c.call("entity.destroy", ids=spawned), {"destroyed": 20})

    def test_calls_on_the_subscribed_client_keep_events(self):
        sub = self.c.subscribe("frame", timeout=scale(10.0))
        first = sub.get().params["frame"]
        for _ in range(5):
            self.assertIn("frame", self.c.call("world.status"))
        nxt = [sub.get().params["frame"] for _ in range(5)]
        self.assertEqual(nxt, list(range(first + 1, first + 6)), "no event lost to the calls")

    def test_one_client_two_subscriptions(self):
        frames = self.c.subscribe("frame", timeout=scale(10.0))
        slow = self.c.subscribe("slow_tick", timeout=scale(10.0))
        ids = self.c.call("entity.spawn", class_="burner", props={"work_us": 6000})["ids"]
        self.addCleanup(self.c.call, "entity.destroy", ids=ids)
        ev = slow.get()
        self.assertEqual((ev.topic, ev.params["entity"], ev.params["class"]),
                         ("slow_tick", ids[0], "burner"))
        self.assertEqual(frames.get().topic, "frame")
        slow.close()
        self.assertEqual(list(slow), [], "a closed subscription ends")
        with self.assertRaises(tickd.ConnectionClosed):
            slow.get()
        self.assertEqual(frames.get().topic, "frame", "the other topic stays subscribed")
        frames.close()
        again = self.c.subscribe("slow_tick", timeout=scale(10.0))
        self.assertEqual(again.get().params["entity"], ids[0])
        again.close()

    def test_timeout_waiting_for_an_event(self):
        with self.c.subscribe("slow_tick", timeout=0.1) as sub:
            t0 = time.monotonic()
            with self.assertRaises(tickd.Timeout):
                next(sub)
            self.assertGreaterEqual(time.monotonic() - t0, 0.1)
            with self.assertRaises(tickd.Timeout):
                sub.get(timeout=0)
        self.assertEqual(self.c.call("engine.info")["name"], "tickd")

    def test_a_bounded_queue_drops_the_oldest(self):
        c = self.client(max_events=3)
        sub = c.subscribe("frame", timeout=scale(10.0))
        first = sub.get().params["frame"]
        deadline = time.monotonic() + scale(10.0)
        while sub.dropped == 0 and time.monotonic() < deadline:
            c.call("world.status")  # reads events into the queue, nobody takes them
        self.assertGreater(sub.dropped, 0)
        self.assertEqual(sub.pending(), 3)
        kept = [sub.get().params["frame"] for _ in range(3)]
        self.assertEqual(kept, list(range(kept[0], kept[0] + 3)))
        self.assertGreater(kept[0], first + 1)


class Timeouts(DaemonCase):
    CONFIG = {"engine.tick_rate": "2"}

    def test_a_call_times_out_and_the_client_goes_on(self):
        self.pause()
        t0 = time.monotonic()
        with self.assertRaises(tickd.Timeout) as cm:
            self.c.request("world.step", {"frames": 100}, timeout=0.2)
        self.assertGreaterEqual(time.monotonic() - t0, 0.2)
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertIn("0.2 s", str(cm.exception))
        self.assertGreater(self.c.call("world.status")["steps_pending"], 0)
        self.assertEqual(self.c.call("world.step_stop"), {})
        # The abandoned step's answer comes now and is dropped, not misread.
        self.assertEqual(self.c.call("engine.info")["name"], "tickd")
        self.assertEqual(self.c.call("world.status")["steps_pending"], 0)
        self.assertEqual(list(self.c.unsolicited), [])

    def test_the_client_timeout_is_the_default(self):
        self.pause()
        c = self.client(timeout=0.1)
        with self.assertRaises(tickd.Timeout):
            c.call("world.step", frames=100)
        with self.assertRaises(tickd.Timeout):
            c.batch([("world.step", {"frames": 100})])
        c.timeout = scale(10.0)  # what follows answers at once: no race with a slow machine
        c.call("world.step_stop")
        self.assertEqual(c.call("engine.info")["name"], "tickd")

    def test_a_pending_result_may_be_asked_again(self):
        self.pause()
        step = self.c.submit("world.step", frames=100)
        with self.assertRaises(tickd.Timeout):
            step.result(timeout=0.05)
        self.c.call("world.step_stop")
        self.assertTrue(step.result()["stopped"])


class ShutDown(unittest.TestCase):

    def test_pending_calls_get_shutting_down_and_events_end(self):
        d = Daemon({"engine.tick_rate": "2"})
        try:
            c = tickd.Client(d.sock, timeout=scale(10.0))
            watcher = tickd.Client(d.sock, timeout=scale(10.0))
            sub = watcher.subscribe("frame")
            c.call("world.pause")
            step = c.submit("world.step", frames=100)
            with tickd.Client(d.sock) as stopper:
                self.assertEqual(stopper.call("engine.shutdown"), {})
            with self.assertRaises(tickd.ShuttingDown) as cm:
                step.result()
            self.assertEqual(cm.exception.code, -32004)
            for _ in sub:  # ends when the daemon closes the connection
                pass
            with self.assertRaises(tickd.ConnectionClosed):
                watcher.call("engine.info")
            self.assertEqual(d.wait_exit(), 0)
            c.close()
            watcher.close()
        finally:
            d.stop()


class Sockets(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon({"control.socket": "run/tickd.sock"})

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_socket_from_tickd_socket(self):
        with environ(TICKD_SOCKET=self.daemon.sock), tickd.Client() as c:
            self.assertEqual(c.socket_path, self.daemon.sock)
            self.assertEqual(c.call("engine.info")["socket"], "run/tickd.sock")

    def test_an_explicit_path_wins(self):
        with environ(TICKD_SOCKET="/nonexistent/tickd.sock"), \
                tickd.Client(self.daemon.sock) as c:
            self.assertEqual(c.call("engine.info")["name"], "tickd")

    def test_run_tickd_sock_in_the_working_directory(self):
        with environ(TICKD_SOCKET=""), cwd(self.daemon.dir), tickd.Client() as c:
            self.assertEqual(c.socket_path, "run/tickd.sock")
            self.assertEqual(c.call("engine.info")["name"], "tickd")

    def test_then_the_system_sockets(self):
        empty = tempfile.mkdtemp(prefix="tickd-py-")
        self.addCleanup(shutil.rmtree, empty, True)
        with environ(TICKD_SOCKET=None), cwd(empty):
            want = ("/run/tickd.sock" if os.path.exists("/run/tickd.sock")
                    else "/run/tickd/tickd.sock")
            self.assertEqual(tickd.resolve_socket(), want)
            self.assertEqual(tickd.resolve_socket("x.sock"), "x.sock")

    def test_cannot_connect(self):
        path = os.path.join(self.daemon.dir, "nothing-here.sock")
        with self.assertRaises(tickd.CannotConnect) as cm:
            tickd.Client(path)
        e = cm.exception
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual(e.filename, path)
        self.assertEqual(e.errno, 2)
        self.assertIn("cannot connect to tickd", str(e))


class FakeServer:
    """A listener that answers with scripted bytes, for what tickd never does."""

    def __init__(self, reply):
        self.dir = tempfile.mkdtemp(prefix="tickd-py-")
        self.path = os.path.join(self.dir, "fake.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.reply = reply
        self.thread = threading.Thread(target=self.serve)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(self.reply)

    def close(self):
        self.thread.join()
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Protocol(unittest.TestCase):

    def served(self, reply):
        server = FakeServer(reply)
        self.addCleanup(server.close)
        c = tickd.Client(server.path, timeout=scale(10.0))
        self.addCleanup(c.close)
        return c

    def test_end_of_stream_before_the_answer(self):
        c = self.served(b"")
        with self.assertRaises(tickd.ConnectionClosed):
            c.call("engine.info")

    def test_not_json(self):
        c = self.served(b"hello\n")
        with self.assertRaises(tickd.ProtocolError):
            c.call("engine.info")

    def test_lines_split_anywhere_and_crlf(self):
        c = self.served(b'{"jsonrpc":"2.0","method":"x"}\r\n{"jsonrpc":"2.0",'
                        b'"result":{"ok":"\xc3\xa9"},"id":1}\r\n')
        self.assertEqual(c.call("engine.info"), {"ok": "\u00e9"})
        self.assertEqual(list(c.unsolicited), [{"jsonrpc": "2.0", "method": "x"}])


# Can this interpreter pip install offline?  setuptools before 70.1 builds
# wheels with the wheel package (Debian 12: python3-wheel, which python3-pip
# depends on).  setuptools is imported before pip (its distutils hack).
_CAN_BUILD = """
import setuptools
v = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
if v < (70, 1):
    import wheel
import pip
"""


def pip_python():
    """An interpreter that can pip install the package offline: this one, else
    Debian's /usr/bin/python3 (pyenv or a venv may lack setuptools or wheel)."""
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if os.access(python, os.X_OK) and subprocess.run(
                [python, "-c", _CAN_BUILD], capture_output=True).returncode == 0:
            return python
    return None


class Packaging(unittest.TestCase):

    def test_pip_installs_it_without_network(self):
        if os.environ.get("SAN"):
            self.skipTest("the package is the same in every build: checked in the normal pass")
        python = pip_python()
        if not python:
            self.skipTest("no python3 here has pip, setuptools and wheel (apt-get install "
                          "python3-pip)")
        tmp = tempfile.mkdtemp(prefix="tickd-py-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tree = os.path.join(ROOT, "clients", "python")
        src = os.path.join(tmp, "src")  # a copy: the build leaves files beside the sources
        shutil.copytree(tree, src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        target = os.path.join(tmp, "site")
        env = dict(os.environ, PIP_NO_INPUT="1", PIP_ROOT_USER_ACTION="ignore")
        run = subprocess.run(
            [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
             "--disable-pip-version-check", "--no-cache-dir", "--no-compile", "-q",
             "--target", target, src],
            capture_output=True, text=True, env=env)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        # Installed: every module of the tree, as it is, and the version.
        package = os.path.join(tree, "src", "tickd")
        for name in sorted(os.listdir(package)):
            if name.endswith(".py") or name == "py.typed":
                with open(os.path.join(package, name), "rb") as a, \
                        open(os.path.join(target, "tickd", name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)
        with open(os.path.join(target, f"tickd-{tickd.__version__}.dist-info", "METADATA")) as f:
            self.assertIn(f"Version: {tickd.__version__}\n", f.read())


def readme_blocks(lang):
    """The ```lang blocks of README.md's "## Clients" section."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"^## Clients\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        return []
    return re.findall(r"^```" + lang + r"\n(.*?)^```", m.group(1), re.S | re.M)


class Readme(DaemonCase):
    """The README's client examples run as written."""

    CONFIG = {"engine.tick_rate": "60"}

    def run_example(self, argv, code, suffix):
        tmp = tempfile.mkdtemp(prefix="tickd-py-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "example" + suffix)
        with open(path, "w") as f:
            f.write(code)
        env = dict(os.environ, TICKD_SOCKET=self.daemon.sock,
                   PYTHONPATH=os.path.join(ROOT, "clients", "python", "src"))
        run = subprocess.run(argv + [path], capture_output=True, text=True, cwd=tmp, env=env,
                             timeout=scale(60))
        self.assertEqual(run.returncode, 0, f"{code}\n---\n{run.stdout}{run.stderr}")
        return run.stdout

    # What each example prints, in part.
    PYTHON_OUTPUT = [r"^tickd \S+ \d+ methods\n.*^-32001 ", r"(?s)^2 frames traced.*'stopped': True",
                     r"^frame \d+ .*\n.*^next frame: \d+$"]

    def test_python_examples(self):
        blocks = readme_blocks("python")
        self.assertEqual(len(blocks), len(self.PYTHON_OUTPUT))
        for code, want in zip(blocks, self.PYTHON_OUTPUT):
            with self.subTest(code=code.splitlines()[-1]):
                out = self.run_example([sys.executable], code, ".py")
                self.assertRegex(out, re.compile(want, re.M | re.S))
                self.c.call("entity.destroy", class_="mover")
        self.assertFalse(self.c.call("world.status")["paused"])

    def test_node_recipe(self):
        blocks = readme_blocks("js")
        self.assertEqual(len(blocks), 1)
        node = shutil.which("node")
        if not node:
            self.skipTest("node is not installed")
        out = self.run_example([node], blocks[0], ".js")
        self.assertRegex(out, r"tickd \d")
        self.assertRegex(out, r"error -32601")
        self.assertRegex(out, r"batch: \d+ -32001")
        self.assertRegex(out, r"(frame \d+ [\d.]+ ms\n){3}")


if __name__ == "__main__":
    unittest.main()
