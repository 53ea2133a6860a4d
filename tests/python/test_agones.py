"""tickd as an Agones game server, against the stand-in SDK server
(tests/python/agones_standin.py): the GameServer lifecycle (Ready once the
socket answers and the snapshot is restored, health pings from the frame
loop, the watch, metadata, Shutdown), the protocol's agones.allocate and
agones.reserve, and every adversity of a sidecar: starting late, refusing,
failing, stalling, streaming slowly or sending garbage; none may stall a
frame.  A frame stuck in a tick stops the pings and the GameServer goes
Unhealthy, as Agones does.

Run by tests/python/run_tests.py (make check), or alone from the repository
root: BUILD=build python3 -m unittest tests/python/test_agones.py -v
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agones_standin import Standin  # noqa: E402
from tickd_daemon import ROOT, Daemon, binary, scale  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
import tickd  # noqa: E402

# Fast beats, so that the tests take seconds; the defaults are 2 s and 30 s.
FAST = {"engine.tick_rate": "100", "agones.health_period_s": "0.1",
        "agones.metadata_s": "0.2", "agones.timeout_s": "2", "agones.retry_max_s": "0.4"}


def free_port():
    """A TCP port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class AgonesCase(unittest.TestCase):
    def setUp(self):
        self.daemons, self.standins, self.clients = [], [], []

    def tearDown(self):
        for c in self.clients:
            c.close()
        for d in self.daemons:
            d.kill()
        for s in self.standins:
            s.stop()

    def standin(self, start=True, **kw):
        s = Standin(**kw)
        self.standins.append(s)
        return s.start() if start else s

    def daemon(self, port, config=None, **kw):
        cfg = dict(FAST)
        cfg.update(config or {})
        d = Daemon(config=cfg, env={"AGONES_SDK_HTTP_PORT": str(port)}, **kw)
        self.daemons.append(d)
        return d

    def client(self, d):
        c = tickd.Client(d.sock, timeout=scale(10))
        self.clients.append(c)
        return c

    def info(self, c):
        return c.call("engine.info")["agones"]

    def wait_info(self, c, pred, what, timeout=10, d=None):
        """Poll engine.info's agones until pred holds; the failure shows the
        daemon's log when `d` is given."""
        deadline = time.monotonic() + scale(timeout)
        while True:
            a = self.info(c)
            if pred(a):
                return a
            if time.monotonic() > deadline:
                self.fail(f"engine.info agones: {what} not reached: {a}"
                          + (f"\n{d.stderr()}" if d else ""))
            time.sleep(0.01)

    def frames_go_on(self, c, n=20):
        """The frame counter moves on by n (the loop is not stalled)."""
        f0 = c.call("world.status")["frame"]
        deadline = time.monotonic() + scale(10)
        while c.call("world.status")["frame"] < f0 + n:
            self.assertLess(time.monotonic(), deadline, "frames stopped")
            time.sleep(0.01)

    def stop(self, d):
        self.assertEqual(d.stop(), 0)

    def assert_last(self, s, path):
        """`path` was called once, and last but for health pings (a ping sent
        just before may arrive after it, on its own connection)."""
        self.assertEqual(len(s.calls_to(path)), 1)
        others = [c.path for c in s.calls if c.path != "/health"]
        self.assertEqual(others[-1], path, others[-5:])


class Lifecycle(AgonesCase):
    def test_ready_health_watch_metadata_passthrough_shutdown(self):
        s = self.standin(health_period=5)
        seen_at_ready = {}
        started = []

        def at_ready(call):
            # Asked from inside the /ready request, before it is answered:
            # the socket answers and the snapshot is loaded by then.
            deadline = time.monotonic() + scale(10)
            while not started and time.monotonic() < deadline:
                time.sleep(0.001)
            with tickd.Client(started[0].sock, timeout=scale(10)) as c:
                seen_at_ready["entities"] = c.call("engine.stats")["entities"]
        s.on_ready = at_ready
        # A world to restore: a snapshot of 4 counters, loaded at start.
        boot = Daemon(config={"engine.tick_rate": "100"})
        self.daemons.append(boot)
        with tickd.Client(boot.sock, timeout=scale(10)) as c:
            c.call("entity.spawn", {"class": "counter", "count": 4})
            with open(c.call("world.save")["path"]) as f:
                doc = f.read()
        boot.stop()
        snapdir = tempfile.mkdtemp(prefix="tickd-agones-")
        self.addCleanup(shutil.rmtree, snapdir, True)
        snap = os.path.join(snapdir, "world.json")
        with open(snap, "w") as f:
            f.write(doc)
        d = Daemon(config=dict(FAST, **{"snapshot.path": snap, "snapshot.load_on_start": "true"}),
                   env={"AGONES_SDK_HTTP_PORT": str(s.port)}, wait=False)
        self.daemons.append(d)
        started.append(d)
        d.wait_ready()
        c = self.client(d)
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        self.assertEqual(seen_at_ready, {"entities": 4})
        self.assertEqual(s.history[:3], ["Scheduled", "RequestReady", "Ready"])
        self.assertEqual(len(s.calls_to("/ready")), 1)
        ready = s.calls_to("/ready")[0]
        self.assertEqual(ready.body, {})
        self.assertEqual(ready.headers.get("Content-Type"), "application/json")
        self.assertEqual(ready.headers.get("Host"), f"127.0.0.1:{s.port}")
        a = self.wait_info(c, lambda a: a["state"] == "Ready" and a["ready"], "Ready")
        self.assertEqual(a, {"sdk": f"127.0.0.1:{s.port}", "state": "Ready",
                             "name": "gs-standin-1", "ready": True, "reachable": True})
        # Health pings keep coming, each a POST {} on its own.
        n = len(s.calls_to("/health"))
        s.wait(lambda: len(s.calls_to("/health")) >= n + 5, scale(10), "5 more pings")
        self.assertTrue(all(p.body == {} for p in s.calls_to("/health")))
        # Metadata: the entity count and TPS as annotations.
        c.call("entity.spawn", {"class": "counter", "count": 3})
        s.wait(lambda: s.annotations.get("agones.dev/sdk-entities") == "7", scale(10),
               "entities = 7")
        self.assertRegex(s.annotations["agones.dev/sdk-tps"], r"^\d+$")
        self.assertEqual(s.labels, {})
        # The protocol passes Reserve and Allocate through; state changes come
        # back as events and in engine.info.
        with self.client(d).subscribe("agones", timeout=scale(10)) as sub:
            self.assertEqual(c.call("agones.reserve", {"seconds": 1}), {})
            self.assertEqual(s.calls_to("/reserve")[-1].body, {"seconds": "1"})
            ev = sub.get()
            self.assertEqual(ev.topic, "agones")
            self.assertEqual((ev.params["state"], ev.params["previous"], ev.params["name"]),
                             ("Reserved", "Ready", "gs-standin-1"))
            self.assertIsInstance(ev.params["frame"], int)
            ev = sub.get()  # the reservation ends
            self.assertEqual((ev.params["state"], ev.params["previous"]), ("Ready", "Reserved"))
            self.assertEqual(c.call("agones.allocate"), {})
            self.assertEqual(s.calls_to("/allocate")[-1].body, {})
            ev = sub.get()
            self.assertEqual((ev.params["state"], ev.params["previous"]), ("Allocated", "Ready"))
            self.assertEqual(self.info(c)["state"], "Allocated")
            # An allocation made outside (a GameServerAllocation) shows too.
            s.set_state("Reserved")
            self.assertEqual(sub.get().params["state"], "Reserved")
            s.set_state("Allocated")
            self.assertEqual(sub.get().params["state"], "Allocated")
        # A timer action may call them too.
        c.call("timer.set", {"rate": 0.01, "action": {"method": "agones.reserve",
                                                       "params": {"seconds": 0}}})
        self.wait_info(c, lambda a: a["state"] == "Reserved", "the action's Reserve")
        self.assertEqual(len(s.calls_to("/reserve")), 2)
        self.assertEqual(s.calls_to("/reserve")[-1].body, {"seconds": "0"})
        # One watch all along, one GET /gameserver after it opened.
        self.assertEqual(len(s.calls_to("/watch/gameserver")), 1)
        self.assertEqual(len(s.calls_to("/gameserver")), 1)
        # Graceful shutdown: POST /shutdown, after the pings.
        self.stop(d)
        self.assertEqual(s.state, "Shutdown")
        self.assert_last(s, "/shutdown")
        self.assertEqual(s.calls_to("/shutdown")[0].body, {})
        self.assertNotRegex(d.stderr(), r"(warn|error): (agones|timer action)")

    def test_labels_instead_of_annotations(self):
        s = self.standin()
        d = self.daemon(s.port, {"agones.labels": "true"})
        s.wait(lambda: "agones.dev/sdk-entities" in s.labels, scale(10), "labels")
        self.assertEqual(s.labels["agones.dev/sdk-entities"], "0")
        self.assertEqual(s.annotations, {})
        self.stop(d)

    def test_metadata_off(self):
        s = self.standin()
        d = self.daemon(s.port, {"agones.metadata_s": "0"})
        c = self.client(d)
        self.wait_info(c, lambda a: a["ready"], "ready")
        s.wait(lambda: len(s.calls_to("/health")) >= 5, scale(10), "pings")
        self.assertEqual(s.calls_to("/metadata/annotation"), [])
        self.stop(d)

    def test_enabled_by_config_without_the_variable(self):
        s = self.standin()
        d = Daemon(config=dict(FAST, **{"agones.enabled": "true", "agones.port": str(s.port)}))
        self.daemons.append(d)
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        self.stop(d)
        self.assertEqual(s.state, "Shutdown")

    def test_off(self):
        """Without the variable or [agones] enabled, nothing is sent and the
        methods say so."""
        d = Daemon(config={"engine.tick_rate": "100"})
        self.daemons.append(d)
        c = self.client(d)
        self.assertIsNone(c.call("engine.info")["agones"])
        for method, params in (("agones.allocate", None), ("agones.reserve", {"seconds": 5})):
            with self.assertRaises(tickd.TickdError) as e:
                c.call(method, params)
            self.assertEqual(e.exception.code, -32002)
            self.assertIn("Agones is off", e.exception.message)
        with self.assertRaises(tickd.TickdError) as e:
            c.call("agones.reserve", {"seconds": -1})
        self.assertEqual(e.exception.code, -32602)
        self.assertNotIn("agones", d.stderr())
        self.stop(d)

    def test_bad_port_variable_refuses_to_start(self):
        for bad in ("abc", "0", "70000", "-1", "9358x"):
            d = Daemon(config={"engine.tick_rate": "100"}, env={"AGONES_SDK_HTTP_PORT": bad},
                       wait=False)
            self.daemons.append(d)
            self.assertEqual(d.wait_exit(), 1, bad)
            self.assertIn(f"AGONES_SDK_HTTP_PORT = {bad}: not a port number", d.stderr())
            r = subprocess.run([binary(), "--check-config"], capture_output=True, text=True,
                               cwd=ROOT, env=dict(os.environ, AGONES_SDK_HTTP_PORT=bad),
                               timeout=scale(30))
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("AGONES_SDK_HTTP_PORT", r.stderr)


class Adversity(AgonesCase):
    def test_sidecar_starts_late(self):
        """Nothing listens at first: frames run, the failure is logged once,
        tries back off, and Ready follows as soon as the sidecar is there."""
        port = free_port()
        d = self.daemon(port)
        c = self.client(d)
        self.frames_go_on(c)
        a = self.info(c)
        self.assertEqual((a["ready"], a["reachable"], a["state"]), (False, False, None))
        s = self.standin(start=False, port=port)
        s.start()
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        self.wait_info(c, lambda a: a["ready"] and a["state"] == "Ready", "Ready")
        err = d.stderr()
        self.assertEqual(err.count("the SDK server does not answer"), 1, err)
        self.assertEqual(err.count("answers again"), 1, err)
        self.assertIn("no connection to the SDK server", err)
        self.stop(d)

    def test_sidecar_goes_away_and_comes_back(self):
        s = self.standin()
        d = self.daemon(s.port)
        c = self.client(d)
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        s.stop()  # refused from now on
        self.wait_info(c, lambda a: not a["reachable"], "unreachable")
        self.frames_go_on(c)
        with self.assertRaises(tickd.TickdError) as e:
            c.call("agones.allocate")
        self.assertEqual(e.exception.code, -32002)
        self.assertIn("no connection to the SDK server", e.exception.message)
        watches = len(s.calls_to("/watch/gameserver"))
        s.start()
        # The watch comes back by itself; the state follows again.
        s.wait(lambda: len(s.calls_to("/watch/gameserver")) > watches, scale(10), "a new watch")
        self.wait_info(c, lambda a: a["reachable"], "reachable again")
        s.set_state("Allocated")
        self.wait_info(c, lambda a: a["state"] == "Allocated", "Allocated", d=d)
        self.assertEqual(d.stderr().count("the SDK server does not answer"), 1, d.stderr())
        self.stop(d)

    def test_sidecar_fails(self):
        """5xx answers: /ready is tried again with backoff until accepted; a
        pass-through answers -32002 with the HTTP status."""
        s = self.standin()
        s.fault("fail", ["/ready"], count=3)
        d = self.daemon(s.port)
        c = self.client(d)
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        tries = s.calls_to("/ready")
        self.assertEqual([t.fault for t in tries], ["fail", "fail", "fail", None])
        gaps = [b.t - a.t for a, b in zip(tries, tries[1:])]
        self.assertTrue(all(g > 0 for g in gaps))
        err = d.stderr()
        self.assertEqual(err.count("POST /ready: HTTP 500"), 1, err)  # logged once
        self.wait_info(c, lambda a: a["ready"], "ready")
        s.fault("fail", ["/allocate"], count=1)
        with self.assertRaises(tickd.TickdError) as e:
            c.call("agones.allocate")
        self.assertEqual(e.exception.code, -32002)
        self.assertIn("HTTP 500", e.exception.message)
        self.assertEqual(e.exception.data, {"http_status": 500})
        self.assertEqual(c.call("agones.allocate"), {})  # the next one goes through
        self.stop(d)

    def test_sidecar_stalls(self):
        """A sidecar that accepts and never answers: each request gives up
        after timeout_s, frames and the control socket go on, pings go on
        (each on a new connection), and a stalled shutdown is bounded."""
        s = self.standin()
        s.fault("stall")
        d = self.daemon(s.port, {"agones.timeout_s": "0.3"})
        c = self.client(d)
        s.wait(lambda: len(s.calls_to("/ready")) >= 3, scale(15), "3 tries of /ready")
        s.wait(lambda: len(s.calls_to("/health")) >= 3, scale(15), "3 pings")
        self.frames_go_on(c)
        with self.assertRaises(tickd.TickdError) as e:
            c.call("agones.allocate")
        self.assertIn("no answer within 0.3 s", e.exception.message)
        self.assertFalse(self.info(c)["ready"])
        # Released: the next try is answered.
        s.clear_faults()
        s.release_stalls()
        self.wait_info(c, lambda a: a["ready"] and a["state"] == "Ready", "Ready")
        # Stalled again at shutdown: tickd still exits, cleanly, in time.
        s.fault("stall", ["/shutdown"])
        t0 = time.monotonic()
        self.stop(d)
        self.assertLess(time.monotonic() - t0, scale(10))
        self.assert_last(s, "/shutdown")
        self.assertIn("POST /shutdown: no answer", d.stderr())

    def test_watch_stalls_before_its_headers(self):
        """A watch that never gets its headers is given up after timeout_s
        and opened again; an idle stream afterwards is kept (no timeout once
        the headers are in)."""
        s = self.standin()
        s.fault("stall", ["/watch/gameserver"], count=1)
        d = self.daemon(s.port, {"agones.timeout_s": "0.3"})
        c = self.client(d)
        s.wait(lambda: len(s.calls_to("/watch/gameserver")) == 2, scale(10), "a second watch")
        self.wait_info(c, lambda a: a["state"] == "Ready", "Ready")
        # Idle for several timeouts: still the same stream.
        f0 = c.call("world.status")["frame"]
        while c.call("world.status")["frame"] < f0 + 150:  # 1.5 s at 100 Hz
            time.sleep(0.02)
        self.assertEqual(len(s.calls_to("/watch/gameserver")), 2)
        s.set_state("Allocated")
        self.wait_info(c, lambda a: a["state"] == "Allocated", "Allocated")
        self.assertEqual(len(s.calls_to("/watch/gameserver")), 2)
        self.stop(d)

    def test_watch_slow_garbage_and_oversized(self):
        """Lines in 7-byte chunks 5 ms apart are put together; lines that are
        not a GameServer are ignored; a line over 1 MiB drops the stream,
        which is opened again; the state follows throughout."""
        s = self.standin()
        s.slow_watch = (7, 0.005)  # the first line too
        d = self.daemon(s.port, {"agones.metadata_s": "0"})  # no updates but ours
        c = self.client(d)
        self.wait_info(c, lambda a: a["state"] == "Ready", "Ready")
        s.wait(lambda: s.watch_sent == s.version, scale(10), "the watch caught up")
        s.slow_watch = None
        garbage = [b"not json\n", b"[1,2]\n", b'{"error":{"grpc_code":2,"message":"x"}}\n',
                   b'{"result":{"status":{"state":"Rea dy"}}}\n',
                   b'{"result":{"status":{"state":"' + b"A" * 40 + b'"}}}\n',
                   b'{"result":{"status":{}}}\n', b'{"result":' + b"[" * 5000 + b"\n",
                   b"\r\n", b'{"result":{"status":{"state":"Allocated"},'
                   b'"object_meta":{"name":"a\\nb"}}}\r\n']
        s.inject(b"".join(garbage), piece=7, pause=0.002)
        a = self.wait_info(c, lambda a: a["state"] == "Allocated", "Allocated")
        self.assertIsNone(a["name"])  # a name with a control character is not shown
        self.assertEqual(len(s.calls_to("/watch/gameserver")), 1)
        s.inject(b'{"result":{"status":{"state":"Reserved"},"pad":"' + b"x" * (1 << 20) +
                 b'"}}\n')
        s.wait(lambda: len(s.calls_to("/watch/gameserver")) == 2, scale(10), "a new watch")
        self.assertIn("a line over 1048576 bytes", d.stderr())
        # The new stream starts with the GameServer as it is: Ready.
        self.wait_info(c, lambda a: a["state"] == "Ready", "Ready after the new watch")
        s.set_state("Allocated")
        self.wait_info(c, lambda a: a["state"] == "Allocated", "Allocated on the new watch")
        self.frames_go_on(c)
        self.stop(d)

    def test_stuck_frame_stops_the_pings_and_agones_marks_unhealthy(self):
        """A frame stuck in ticks sends no POST /health (as it sends no
        WATCHDOG=1): the stand-in, checking every 0.5 s with a threshold of 2,
        marks the GameServer Unhealthy; tickd reports it once the frame is
        done, and Unhealthy is final."""
        s = self.standin(health_period=0.5, failure_threshold=2)
        d = self.daemon(s.port)
        c = self.client(d)
        s.wait(lambda: s.state == "Ready", scale(10), "Ready")
        s.wait(lambda: len(s.calls_to("/health")) >= 5, scale(10), "pings")
        with self.client(d).subscribe("agones", timeout=scale(20)) as sub:
            # 3 burners of 0.8 s each, gone at the end of their first frame
            # (a life span shorter than a frame): one frame of 2.4 s, past
            # 2 checks of 0.5 s.
            c.call("entity.spawn", {"class": "burner", "count": 3, "life_span": 0.001,
                                    "props": {"work_us": 800000}})
            ev = sub.get()
            self.assertEqual((ev.params["state"], ev.params["previous"]), ("Unhealthy", "Ready"))
        self.assertEqual(self.info(c)["state"], "Unhealthy")
        # Pings resume after the frame; the longest silence is the frame's.
        n = len(s.calls_to("/health"))
        s.wait(lambda: len(s.calls_to("/health")) >= n + 3, scale(10), "pings again")
        pings = [p.t for p in s.calls_to("/health")]
        silence = max(b - a for a, b in zip(pings, pings[1:]))
        self.assertGreaterEqual(silence, 0.9 * 2.4, "pinged while the frame was stuck")
        # Unhealthy is final.
        self.assertEqual(c.call("agones.allocate"), {})
        self.assertEqual(s.state, "Unhealthy")
        self.stop(d)

    def test_queue_bound(self):
        """Behind one call stalled in flight, at most 64 pass-through calls
        wait; one more is refused at once with -32003; the waiting ones are
        answered once the sidecar goes on."""
        s = self.standin()
        d = self.daemon(s.port, {"agones.timeout_s": "5"})
        c = self.client(d)
        self.wait_info(c, lambda a: a["ready"], "ready")
        s.fault("stall", ["/allocate"], count=1)
        first = c.submit("agones.allocate")
        s.wait(lambda: len(s.calls_to("/allocate")) == 1, scale(10), "the first /allocate")
        waiting = [c.submit("agones.allocate") for _ in range(64)]
        with self.assertRaises(tickd.TickdError) as e:
            c.call("agones.reserve", {"seconds": 1})
        self.assertEqual(e.exception.code, -32003)
        self.assertIn("64 requests to the Agones SDK server wait already", e.exception.message)
        self.frames_go_on(c)
        s.release_stalls()
        self.assertEqual(first.result(timeout=scale(10)), {})
        for p in waiting:
            self.assertEqual(p.result(timeout=scale(30)), {})
        self.assertEqual(len(s.calls_to("/allocate")), 65)
        self.stop(d)


if __name__ == "__main__":
    unittest.main()
