"""A real tickd for the Python client's tests, as tests/integration/harness.c
starts it: a temporary directory holding a generated config (unlimited tick
rate, fixed dt 0.01, its own socket and snapshot path), the daemon run in it,
ready once engine.info answers on the socket.

The binary is $TICKD_BIN, else $BUILD/tickd, else build/tickd, relative to the
repository root.  Deadlines scale with $TKIT_SCALE (slow sanitizer builds).
"""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

DEFAULTS = {
    "engine.tick_rate": "0",
    "engine.fixed_dt": "0.01",
    "control.socket": "@DIR@/tickd.sock",
    "snapshot.path": "@DIR@/snapshot.json",
    "log.level": "info",
}


def scale(seconds):
    try:
        factor = float(os.environ.get("TKIT_SCALE", "1"))
    except ValueError:
        factor = 1.0
    return seconds * max(1.0, factor)


def binary():
    path = os.environ.get("TICKD_BIN")
    if not path:
        path = os.path.join(os.environ.get("BUILD") or "build", "tickd")
    path = os.path.join(ROOT, path)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"tickd binary {path} not found (build it: make {path})")
    return path


def tool(name):
    """$BUILD/NAME (tickctl, tickd-load), as binary() finds tickd."""
    path = os.path.join(ROOT, os.environ.get("BUILD") or "build", name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{name} binary {path} not found (build it: make {path})")
    return path


def answers(sock):
    """True when engine.info answers on the socket `sock` (a raw exchange, so
    the client under test is not what says the daemon is ready)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(scale(2.0))
        s.connect(sock)
        s.sendall(b'{"jsonrpc":"2.0","id":"ready","method":"engine.info"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                return False
            data += chunk
        reply = json.loads(data)
        return reply.get("id") == "ready" and "result" in reply
    except (OSError, ValueError):
        return False
    finally:
        s.close()


def _die_with_parent():
    """In the child: SIGKILL when the test process dies (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Daemon:
    """tickd on a config of DEFAULTS edited by `config` ({"section.key": value,
    None deletes}); "@DIR@" in values is the daemon's directory.  `env` adds
    variables to its environment (systemd's and Agones' are removed from the
    inherited one)."""

    def __init__(self, config=None, args=None, wait=True, env=None):
        base = os.environ.get("TMPDIR") or "/tmp"
        self.dir = tempfile.mkdtemp(prefix="tickd-py-", dir=base)
        kv = dict(DEFAULTS)
        kv.update(config or {})
        sections = {}
        for key, value in kv.items():
            if value is None:
                continue
            section, name = key.split(".", 1)
            sections.setdefault(section, []).append((name, str(value).replace("@DIR@", self.dir)))
        self.config = os.path.join(self.dir, "tickd.ini")
        with open(self.config, "w") as f:
            for section, items in sections.items():
                f.write(f"[{section}]\n")
                for name, value in items:
                    f.write(f"{name} = {value}\n")
        sock = dict(sections["control"]).get("socket", "run/tickd.sock")
        if sock.startswith("/"):
            self.sock = sock
        else:
            self.sock = os.path.join(self.dir, sock)
            os.makedirs(os.path.dirname(self.sock), exist_ok=True)  # make run's mkdir -p run
        env_extra = env
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS",
                            "LISTEN_PID", "LISTEN_FDNAMES", "TICKD_SOCKET",
                            "AGONES_SDK_HTTP_PORT")}
        env.update(env_extra or {})
        self.out_path = os.path.join(self.dir, "stdout.log")
        self.err_path = os.path.join(self.dir, "stderr.log")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([binary(), "--config", self.config] + list(args or []),
                                         cwd=self.dir, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=env, preexec_fn=_die_with_parent)
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                self.kill()  # the error quotes its stderr
                raise

    def stderr(self):
        """Everything it wrote to stderr (kept after stop() removed its
        directory)."""
        if getattr(self, "final_stderr", None) is not None:
            return self.final_stderr
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def wait_ready(self):
        deadline = time.monotonic() + scale(10.0)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tickd exited with {self.proc.returncode} before it was "
                                   f"ready; stderr:\n{self.stderr()}")
            if answers(self.sock):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"tickd not ready on {self.sock}; stderr:\n{self.stderr()}")
            time.sleep(0.005)

    def wait_exit(self, seconds=10.0):
        """The exit status, or None if it is still running after `seconds`."""
        try:
            return self.proc.wait(scale(seconds))
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """SIGTERM; returns the exit status (killed and an error after 10 s).
        The directory is removed when the daemon ended cleanly."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.wait_exit()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"tickd did not exit on SIGTERM; stderr:\n{self.stderr()}")
        if rc != 0:
            raise RuntimeError(f"tickd exited with {rc}; stderr:\n{self.stderr()}")
        if os.path.lexists(self.sock):
            raise RuntimeError(f"tickd left its socket {self.sock} behind")
        self.final_stderr = self.stderr()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
