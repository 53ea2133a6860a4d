"""Many worlds on one machine: two instances of systemd/tickd@.service run
side by side the way systemd would run them, under a temporary root.

systemd is not PID 1 where `make check` runs, so this plays its part from the
unit file itself: the [Service] section's Environment=, ExecStart=,
RuntimeDirectory=, StateDirectory= and WorkingDirectory= lines are read,
%i and ${VAR} are expanded as systemd does, and the unit's absolute paths
(/etc/tickd, /run/tickd, /var/lib/tickd, /usr/local/bin) are moved under the
temporary root.  Both instances get the same .ini file (the one `make
install` writes), so whatever keeps them apart comes from the unit.  Then:
each world answers on its own socket, `tickctl -w NAME` and `tickd-load
--world NAME` find it, the two never hold a file or a socket in common, each
writes only under its own names, logs carry the instance name, and stopping
one leaves the other untouched.

Run by tests/python/run_tests.py (make check), or alone from the repository
root: BUILD=build python3 -m unittest tests/python/test_instances.py -v
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tickd_daemon import ROOT, _die_with_parent, answers, binary, scale, tool  # noqa: E402

UNIT = os.path.join(ROOT, "systemd", "tickd@.service")
# The unit's absolute prefixes, moved under the temporary root (the binary
# itself is replaced by the one under test).
PREFIXES = ("/etc/tickd", "/run/tickd", "/var/lib/tickd")


def read_service(path):
    """The [Service] section of a unit file as a list of (key, value)."""
    items, section = [], None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[Service]":
                key, _, value = line.partition("=")
                items.append((key, value))
    return items


def expand(value, name, env):
    """systemd's specifier %i and ${VAR} / $VAR expansion (the subset the unit
    uses; anything else fails the test instead of being guessed)."""
    value = value.replace("%i", name)
    if re.search(r"%[^i%]", value):
        raise AssertionError(f"unit uses a specifier this test does not know: {value}")

    def var(m):
        key = m.group(1) or m.group(2)
        if key not in env and key != "MAINPID":
            raise AssertionError(f"unit expands ${key}, which no Environment= sets")
        return env.get(key, m.group(0))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", var, value)


class World:
    """One instance, NAME, started from the unit under `root`."""

    def __init__(self, root, name, ini_text):
        self.root, self.name = root, name
        env = {}
        service = read_service(UNIT)
        for key, value in service:
            if key == "Environment":
                k, _, v = expand(value, name, env).partition("=")
                env[k] = v
        cfg = dict((k, expand(v, name, env)) for k, v in service if k != "Environment")
        # What systemd creates before ExecStart: the runtime and state
        # directories with their modes, the working directory.
        rt = self.path("/run/" + cfg["RuntimeDirectory"])
        os.makedirs(rt, exist_ok=True)
        os.chmod(rt, int(cfg["RuntimeDirectoryMode"], 8))
        self.state = self.path("/var/lib/" + cfg["StateDirectory"])
        os.makedirs(self.state, exist_ok=True)
        os.chmod(self.state, int(cfg["StateDirectoryMode"], 8))
        self.cwd = self.path(cfg["WorkingDirectory"])
        ini = self.path(f"/etc/tickd/{name}.ini")
        os.makedirs(os.path.dirname(ini), exist_ok=True)
        with open(ini, "w") as f:
            f.write(ini_text)
        argv = cfg["ExecStart"].split()
        if any(q in cfg["ExecStart"] for q in "\"'\\"):
            raise AssertionError("ExecStart quotes words; this test splits on blanks")
        if argv[0] != "/usr/local/bin/tickd":
            raise AssertionError(f"ExecStart runs {argv[0]}")
        self.argv = [binary()] + [self.path(a) for a in argv[1:]]
        self.sock = self.path(f"/run/tickd/{name}.sock")
        self.metrics = self.path(f"/run/tickd/{name}.metrics.sock")
        full_env = {k: v for k, v in os.environ.items()
                    if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID",
                                 "TICKD_SOCKET", "AGONES_SDK_HTTP_PORT", "JOURNAL_STREAM")}
        full_env.update(env)
        self.err_path = os.path.join(root, f"{name}.stderr")
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=full_env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + scale(10)
        while not answers(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"{name} not ready ({' '.join(self.argv)}):\n"
                                     f"{self.stderr()}")
            time.sleep(0.005)

    def path(self, p):
        """A path of the unit (or an argument holding one) under the root."""
        for prefix in PREFIXES:
            p = p.replace(prefix + "/", self.root + prefix + "/")
            if p.endswith(prefix):
                p = p[: -len(prefix)] + self.root + prefix
        return p

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def call(self, method, params=None):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(scale(10))
        try:
            s.connect(self.sock)
            req = {"jsonrpc": "2.0", "id": 1, "method": method}
            if params is not None:
                req["params"] = params
            s.sendall(json.dumps(req).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return json.loads(data)
        finally:
            s.close()

    def ok(self, method, params=None):
        reply = self.call(method, params)
        if "result" not in reply:
            raise AssertionError(f"{self.name}: {method}: {reply}")
        return reply["result"]

    def held(self):
        """What the process holds open: file paths and Unix socket addresses
        (by inode, through /proc/net/unix), without /dev and pipes."""
        unix = {}
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) >= 8:
                    unix[parts[6]] = parts[7]
        held = set()
        fddir = f"/proc/{self.proc.pid}/fd"
        for fd in os.listdir(fddir):
            try:
                target = os.readlink(os.path.join(fddir, fd))
            except OSError:
                continue  # closed meanwhile
            m = re.match(r"socket:\[(\d+)\]", target)
            if m:
                if m.group(1) in unix:
                    held.add("unix:" + unix[m.group(1)])
            elif target.startswith("/") and not target.startswith("/dev/"):
                held.add(target)
        return held

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(scale(10))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not stop on SIGTERM:\n{self.stderr()}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def installed_ini():
    """config/tickd.ini as `make install` writes it (the Makefile's sed)."""
    with open(os.path.join(ROOT, "config", "tickd.ini")) as f:
        text = f.read()
    for old, new in (("socket = run/tickd.sock", "socket = /run/tickd/tickd.sock"),
                     ("path = run/tickd.snapshot.json",
                      "path = /var/lib/tickd/tickd.snapshot.json"),
                     ("listen = 127.0.0.1:8497", "listen = unix:/run/tickd/metrics.sock")):
        if f"\n{old}\n" not in text:
            raise AssertionError(f"config/tickd.ini has no line '{old}' for make install")
        text = text.replace(f"\n{old}\n", f"\n{new}\n")
    return text


def http_get_unix(path, url):
    """(status, body) of GET url over the Unix socket `path`."""
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(scale(10))
            self.sock.connect(path)
    c = Conn("localhost")
    try:
        c.request("GET", url)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


class InstancesTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="tickd-worlds-", dir=os.environ.get("TMPDIR"))
        self.worlds = []

    def tearDown(self):
        for w in self.worlds:
            w.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self, name):
        w = World(self.root, name, installed_ini())
        self.worlds.append(w)
        return w

    def tools_env(self):
        env = dict(os.environ)
        env.pop("TICKD_SOCKET", None)
        env["TICKD_RUNTIME_DIR"] = os.path.join(self.root, "run", "tickd")
        return env

    def test_two_worlds_side_by_side(self):
        alpha, beta = self.start("alpha"), self.start("beta")
        # Each answers on its own socket, under its own name.
        for w in (alpha, beta):
            info = w.ok("engine.info")
            self.assertEqual(info["instance"], w.name)
            self.assertEqual(info["socket"], w.sock)
            self.assertEqual(info["pid"], w.proc.pid)
        # tickctl -w NAME and tickd-load --world NAME find each world.
        env = self.tools_env()
        for w in (alpha, beta):
            for flag in ("-w", "--world"):
                r = subprocess.run([tool("tickctl"), flag, w.name, "--compact", "engine.info"],
                                   capture_output=True, text=True, env=env, timeout=scale(30))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["pid"], w.proc.pid)
        r = subprocess.run([tool("tickctl"), "-w", "gamma", "engine.info"],
                           capture_output=True, text=True, env=env, timeout=scale(30))
        self.assertEqual(r.returncode, 2)
        self.assertIn(os.path.join(self.root, "run", "tickd", "gamma.sock"), r.stderr)
        scenario = os.path.join(self.root, "tiny.jsonl")
        with open(scenario, "w") as f:
            f.write('{"scenario": "tiny", "connections": 1}\n'
                    '{"at": 0.0, "method": "level.add", "params": {"name": "loaded"}}\n'
                    '{"at": 0.1, "method": "world.status", "repeat": {"every": 0.05, "count": 4}}\n'
                    '{"at": 0.4, "end": true}\n')
        report = os.path.join(self.root, "report.json")
        r = subprocess.run([tool("tickd-load"), "--world", "beta", "--quiet", "--json", report,
                            scenario], capture_output=True, text=True, env=env,
                           timeout=scale(60))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(report) as f:
            self.assertEqual(json.load(f)["run"]["socket"], beta.sock)
        self.assertIn("loaded", [lv["name"] for lv in beta.ok("level.list")["levels"]])
        self.assertNotIn("loaded", [lv["name"] for lv in alpha.ok("level.list")["levels"]])

        # Snapshots go to each world's own directory, and nowhere else.
        alpha.ok("entity.spawn", {"class": "counter", "count": 3})
        beta.ok("entity.spawn", {"class": "counter", "count": 5})
        sa, sb = alpha.ok("world.save"), beta.ok("world.save")
        self.assertEqual(sa["path"], os.path.join(alpha.state, "snapshot.json"))
        self.assertEqual(sb["path"], os.path.join(beta.state, "snapshot.json"))
        self.assertEqual((sa["entities"], sb["entities"]), (3, 5))
        err = alpha.call("world.save", {"path": "../beta/stolen.json"})
        self.assertEqual(err["error"]["code"], -32602, err)
        self.assertIn("outside the snapshot directory", err["error"]["message"])

        # Metrics: each world on its own socket.
        for w in (alpha, beta):
            status, body = http_get_unix(w.metrics, "/healthz")
            self.assertEqual(status, 200, body)

        # Never a file or a socket in common, and every file under the root
        # is named for one world.
        ha, hb = alpha.held(), beta.held()
        self.assertIn("unix:" + alpha.sock, ha)
        self.assertIn("unix:" + beta.sock, hb)
        self.assertEqual(ha & hb, set(), "files or sockets held by both worlds")
        for w, held in ((alpha, ha), (beta, hb)):
            for p in held:
                if p.startswith("unix:"):
                    p = p[5:]
                if p.startswith(self.root):
                    rel = os.path.relpath(p, self.root)
                    self.assertRegex(rel, rf"(^|/){w.name}([./]|$)", f"{w.name} holds {p}")
        run = sorted(os.listdir(os.path.join(self.root, "run", "tickd")))
        self.assertEqual(run, ["alpha.metrics.sock", "alpha.sock",
                               "beta.metrics.sock", "beta.sock"])
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "var", "lib", "tickd"))),
                         ["alpha", "beta"])
        self.assertEqual(os.listdir(alpha.state), ["snapshot.json"])
        self.assertEqual(os.listdir(beta.state), ["snapshot.json"])

        # Logs carry the instance name, each its own.
        for w, other in ((alpha, beta), (beta, alpha)):
            lines = [l for l in w.stderr().splitlines() if l]
            self.assertTrue(lines)
            for line in lines:
                self.assertRegex(line, rf"^\S+Z \w+: {w.name}: ", line)
            self.assertNotIn(f": {other.name}: ", w.stderr())

        # Stopping one leaves the other answering, with its files.
        self.assertEqual(alpha.stop(), 0, alpha.stderr())
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "run", "tickd"))),
                         ["beta.metrics.sock", "beta.sock"])
        self.assertEqual(beta.ok("engine.info")["pid"], beta.proc.pid)
        self.assertEqual(beta.stop(), 0, beta.stderr())
        self.assertEqual(os.listdir(os.path.join(self.root, "run", "tickd")), [])

    def test_world_option_errors(self):
        """A bad name, --world with --socket, or a runtime directory too long
        for a socket address are usage errors (exit 2) naming the fault,
        before anything connects."""
        env = self.tools_env()
        cases = [
            (["tickctl", "-w", "a/b", "engine.info"], "contains '/'"),
            (["tickctl", "--world", "-x", "engine.info"], "must start with a letter or a digit"),
            (["tickctl", "-w", "alpha", "-s", "/x.sock", "engine.info"], "exclude each other"),
            (["tickctl", "-w", "", "engine.info"], "--world needs a name"),
            (["tickctl", "-w", "a" * 65, "top", "--once"], "longer than 64"),
            (["tickd-load", "--world", ".x", "smoke"], "must start with a letter or a digit"),
            (["tickd-load", "-w", "alpha", "-s", "/x.sock", "smoke"], "exclude each other"),
        ]
        for argv, needle in cases:
            r = subprocess.run([tool(argv[0])] + argv[1:], capture_output=True, text=True,
                               env=env, timeout=scale(30))
            self.assertEqual(r.returncode, 2, (argv, r.stderr))
            self.assertIn(needle, r.stderr, argv)
        long_env = dict(env, TICKD_RUNTIME_DIR="/" + "d" * 120)
        r = subprocess.run([tool("tickctl"), "-w", "alpha", "engine.info"], capture_output=True,
                           text=True, env=long_env, timeout=scale(30))
        self.assertEqual(r.returncode, 2)
        self.assertIn("longer than a Unix socket path", r.stderr)

    def test_a_world_restarts_from_its_own_snapshot(self):
        """With load_on_start, a restarted world reads back its own snapshot,
        never its neighbour's (their .ini files are the same)."""
        text = installed_ini().replace("\nload_on_start = false\n", "\nload_on_start = true\n")
        self.assertIn("\nload_on_start = true\n", text)
        alpha = World(self.root, "alpha", text)
        self.worlds.append(alpha)
        beta = World(self.root, "beta", text)
        self.worlds.append(beta)
        alpha.ok("entity.spawn", {"class": "counter", "count": 2})
        beta.ok("entity.spawn", {"class": "counter", "count": 7})
        alpha.ok("world.save")
        beta.ok("world.save")
        self.assertEqual(alpha.stop(), 0)
        again = World(self.root, "alpha", text)  # the restart: its directories exist
        self.worlds.append(again)
        self.assertEqual(again.ok("engine.stats")["entities"], 2)
        self.assertIn(f"snapshot: loaded {os.path.join(alpha.state, 'snapshot.json')}",
                      again.stderr())
        self.assertEqual(beta.ok("engine.stats")["entities"], 7)

if __name__ == "__main__":
    unittest.main()
