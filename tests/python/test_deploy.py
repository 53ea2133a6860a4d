"""The deployment files (deploy/): what can be checked without a container
engine or a Kubernetes cluster, neither of which exists where `make check`
runs.

- deploy/Dockerfile: every COPY source exists in the build context (the
  repository root) or is built by the build stage; the runtime stage runs
  as a non-root user; its ENTRYPOINT, with the image's paths mapped back to
  the files COPY puts there (and the Fleet's args appended), is a command
  line that `tickd --check-config` accepts; started that way (the image's
  writable directories under a temporary root), the daemon answers the
  HEALTHCHECK's tickctl command with the image's ENV.
- deploy/k8s/*.yaml: parse as YAML (python3-yaml), hold the fields Agones
  requires for a Fleet and a FleetAutoscaler, the autoscaler names the
  Fleet, and the Fleet's health settings leave room for tickd's ping period
  (periodSeconds at least twice [agones] health_period_s).

Run by tests/python/run_tests.py (make check), or alone from the repository
root: BUILD=build python3 -m unittest tests/python/test_deploy.py -v
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tickd_daemon import ROOT, _die_with_parent, answers, binary, scale, tool  # noqa: E402

DOCKERFILE = os.path.join(ROOT, "deploy", "Dockerfile")
FLEET = os.path.join(ROOT, "deploy", "k8s", "fleet.yaml")
AUTOSCALER = os.path.join(ROOT, "deploy", "k8s", "fleetautoscaler.yaml")


def dockerfile_stages(path):
    """The Dockerfile's stages: a list of lists of (INSTRUCTION, arguments),
    continuation lines joined and comments dropped."""
    stages, logical, cur = [], [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not cur and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                cur += line[:-1] + " "
                continue
            logical.append(cur + line)
            cur = ""
    for line in logical:
        word, _, rest = line.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append([])
        if not stages:
            raise AssertionError(f"{path}: {word} before any FROM")
        stages[-1].append((word, rest.strip()))
    return stages


def exec_form(args, what):
    """A JSON exec-form argument list (["a", "b"])."""
    try:
        argv = json.loads(args)
    except ValueError:
        raise AssertionError(f"{what} is not in exec form (a JSON array): {args}") from None
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise AssertionError(f"{what}: not a non-empty array of strings: {args}")
    return argv


class DockerfileTest(unittest.TestCase):
    def setUp(self):
        self.stages = dockerfile_stages(DOCKERFILE)
        self.final = self.stages[-1]

    def instr(self, word, stage=None):
        return [a for w, a in (stage or self.final) if w == word]

    def copies(self, stage):
        """(from_stage or None, [sources], destination) of each COPY."""
        out = []
        for args in self.instr("COPY", stage):
            words = shlex.split(args)
            frm = None
            while words and words[0].startswith("--"):
                opt = words.pop(0)
                if opt.startswith("--from="):
                    frm = opt[len("--from="):]
            self.assertGreaterEqual(len(words), 2, f"COPY {args}")
            out.append((frm, words[:-1], words[-1]))
        return out

    def image_paths(self):
        """Image path -> repository file, for the runtime stage's plain COPYs
        of single files."""
        paths = {}
        for frm, srcs, dest in self.copies(self.final):
            if frm is None and len(srcs) == 1 and not dest.endswith("/"):
                paths[dest] = os.path.join(ROOT, srcs[0])
        return paths

    def test_copy_sources_exist(self):
        for stage in self.stages:
            for frm, srcs, dest in self.copies(stage):
                for src in srcs:
                    if frm is None:
                        self.assertTrue(os.path.exists(os.path.join(ROOT, src)),
                                        f"COPY {src}: not in the build context")
                    else:
                        # Built by that stage: a make target of its RUN lines.
                        built = " ".join(self.instr("RUN", self.stages[0]))
                        self.assertIn(os.path.relpath(src, "/src"), built,
                                      f"COPY --from={frm} {src}: not built there")

    def test_runs_as_a_non_root_user(self):
        users = self.instr("USER")
        self.assertTrue(users, "the runtime stage sets no USER")
        user = users[-1].split(":")[0]
        self.assertNotIn(user, ("0", "root"))

    def test_healthcheck_uses_tickctl(self):
        hc = self.instr("HEALTHCHECK")
        self.assertEqual(len(hc), 1)
        cmd = hc[0][hc[0].index("CMD") + 3:].strip()
        self.assertEqual(exec_form(cmd, "HEALTHCHECK CMD")[0], "tickctl")

    def entrypoint(self):
        ep = self.instr("ENTRYPOINT")
        self.assertEqual(len(ep), 1)
        argv = exec_form(ep[0], "ENTRYPOINT")
        self.assertEqual(argv[0], "tickd")
        cmd = self.instr("CMD")
        return argv + (exec_form(cmd[-1], "CMD") if cmd else [])

    def fleet_args(self):
        with open(FLEET) as f:
            fleet = yaml.safe_load(f)
        return fleet["spec"]["template"]["spec"]["template"]["spec"]["containers"][0].get(
            "args", [])

    def test_entrypoint_passes_check_config(self):
        """The image's command line, its config being the file COPY puts at
        that path, and with the Fleet's args too."""
        paths = self.image_paths()
        argv = [paths.get(a, a) for a in self.entrypoint()[1:]]
        self.assertIn(os.path.join(ROOT, "config", "tickd.ini"), argv,
                      "the ENTRYPOINT's --config is not a file the image copies")
        for extra in ([], self.fleet_args()):
            r = subprocess.run([binary()] + argv + extra + ["--check-config"],
                               capture_output=True, text=True, cwd=ROOT, timeout=scale(30),
                               env={k: v for k, v in os.environ.items()
                                    if k != "AGONES_SDK_HTTP_PORT"})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("configuration OK", r.stdout)

    def test_healthcheck_answers_against_the_entrypoint(self):
        """Started as the image starts it, the daemon serves the health
        check: the HEALTHCHECK's tickctl, with the image's ENV, exits 0."""
        root = tempfile.mkdtemp(prefix="tickd-image-")
        self.addCleanup(shutil.rmtree, root, True)
        writable = ("/run/tickd", "/var/lib/tickd")  # made by the runtime stage's RUN
        for d in writable:
            self.assertIn(f" {d}", " ".join(self.instr("RUN")), f"{d} is not made in the image")
            os.makedirs(root + d)

        def mapped(arg):
            for d in writable:
                arg = arg.replace(d, root + d)
            return arg
        paths = self.image_paths()
        argv = [binary()] + [mapped(paths.get(a, a)) for a in self.entrypoint()[1:]]
        # The image serves metrics on 0.0.0.0:8497; a test may not take a
        # fixed port on a shared machine (a later --set wins).
        argv += ["--set", "metrics.listen="]
        env = {k: v for k, v in os.environ.items()
               if k not in ("AGONES_SDK_HTTP_PORT", "TICKD_SOCKET", "NOTIFY_SOCKET")}
        for e in self.instr("ENV"):
            k, _, v = e.partition("=")
            env[k.strip()] = mapped(v.strip())
        self.assertEqual(env.get("TICKD_SOCKET"), root + "/run/tickd/tickd.sock")
        err = open(os.path.join(root, "stderr"), "wb")
        self.addCleanup(err.close)
        proc = subprocess.Popen(argv, cwd=root + "/var/lib/tickd", env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, preexec_fn=_die_with_parent)
        try:
            deadline = time.monotonic() + scale(10)
            while not answers(env["TICKD_SOCKET"]):
                self.assertIsNone(proc.poll(), "the entrypoint's tickd exited")
                self.assertLess(time.monotonic(), deadline, "the entrypoint's tickd not ready")
                time.sleep(0.01)
            hc = self.instr("HEALTHCHECK")[0]
            cmd = exec_form(hc[hc.index("CMD") + 3:].strip(), "HEALTHCHECK CMD")
            r = subprocess.run([tool("tickctl")] + cmd[1:], capture_output=True, text=True,
                               env=env, timeout=scale(30))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["pid"], proc.pid)
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(scale(10)), 0)


class ManifestTest(unittest.TestCase):
    def load(self, path):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        self.assertEqual(len(docs), 1, f"{path}: one document")
        return docs[0]

    def test_fleet(self):
        fleet = self.load(FLEET)
        self.assertEqual(fleet["apiVersion"], "agones.dev/v1")
        self.assertEqual(fleet["kind"], "Fleet")
        self.assertRegex(fleet["metadata"]["name"], r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
        spec = fleet["spec"]
        self.assertIsInstance(spec["replicas"], int)
        self.assertGreaterEqual(spec["replicas"], 0)
        self.assertIn(spec.get("scheduling", "Packed"), ("Packed", "Distributed"))
        gs = spec["template"]["spec"]
        self.assertIsInstance(gs.get("ports", []), list)
        health = gs["health"]
        for key in ("periodSeconds", "failureThreshold", "initialDelaySeconds"):
            self.assertIsInstance(health[key], int, key)
            self.assertGreaterEqual(health[key], 1, key)
        self.assertFalse(health.get("disabled", False))
        if "sdkServer" in gs:
            self.assertIsInstance(gs["sdkServer"].get("httpPort", 9358), int)
        pod = gs["template"]["spec"]
        containers = pod["containers"]
        self.assertEqual(len(containers), 1, "one container: the game server")
        c = containers[0]
        self.assertTrue(c["name"] and c["image"])
        version = subprocess.run([binary(), "--version"], capture_output=True, text=True,
                                 timeout=scale(30)).stdout.split()[1]
        self.assertEqual(c["image"].rpartition(":")[2], version, "the image tag is tickd's version")
        # tickd's ping period: the Fleet's --set, else the shipped config's.
        period = None
        args = c.get("args", [])
        for a in args:
            m = re.match(r"agones\.health_period_s=(.+)$", a)
            if m:
                period = float(m.group(1))
        if period is None:
            with open(os.path.join(ROOT, "config", "tickd.ini")) as f:
                period = float(re.search(r"\nhealth_period_s = (\S+)\n", f.read()).group(1))
        self.assertLessEqual(2 * period, health["periodSeconds"],
                             f"pings every {period} s against periodSeconds "
                             f"{health['periodSeconds']}: one late ping is a failure")
        # Non-root, matching the image's user; writable paths as volumes.
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(pod["securityContext"]["runAsUser"], 10001)
        with open(DOCKERFILE) as f:
            self.assertIn("\nUSER 10001:10001\n", f.read())
        if c.get("securityContext", {}).get("readOnlyRootFilesystem"):
            mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
            self.assertTrue({"/run/tickd", "/var/lib/tickd"} <= mounts,
                            "a read-only root needs /run/tickd and /var/lib/tickd mounted")
            names = {v["name"] for v in pod.get("volumes", [])}
            self.assertTrue({m["name"] for m in c["volumeMounts"]} <= names)

    def test_fleet_autoscaler(self):
        fas = self.load(AUTOSCALER)
        fleet = self.load(FLEET)
        self.assertEqual(fas["apiVersion"], "autoscaling.agones.dev/v1")
        self.assertEqual(fas["kind"], "FleetAutoscaler")
        self.assertTrue(fas["metadata"]["name"])
        self.assertEqual(fas["spec"]["fleetName"], fleet["metadata"]["name"])
        policy = fas["spec"]["policy"]
        self.assertEqual(policy["type"], "Buffer")
        buf = policy["buffer"]
        self.assertIn("maxReplicas", buf)  # required by Agones for Buffer
        size = buf["bufferSize"]
        self.assertTrue(isinstance(size, int) or re.match(r"^\d+%$", str(size)))
        self.assertLessEqual(buf.get("minReplicas", 0), buf["maxReplicas"])
        if isinstance(size, int):
            self.assertLessEqual(size, buf["maxReplicas"])


if __name__ == "__main__":
    unittest.main()
