"""rpc.discover against a real tickd: the document is valid OpenRPC (checked
with python3-jsonschema against the meta-schema vendored in
tests/data/openrpc, so the test runs offline), it names exactly the methods
the daemon answers, and the constraints it states are the ones the daemon
enforces (a value just outside a documented range, enum or required set is
refused with -32602 naming the param).

Run by tests/python/run_tests.py (make check), or alone from the repository
root: BUILD=build python3 -m unittest discover -s tests/python -p test_discover.py -v
"""

import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tickd_daemon import ROOT, Daemon, scale  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
import tickd  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "openrpc")
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

# validate(doc, data_dir) -> the meta-schema's complaints about `doc` (a
# list of strings).  Run in this interpreter when it has jsonschema, else in
# the system's (Debian's python3-jsonschema, which `make deps` installs, may
# sit beside a python3 of another origin) with the document on stdin.
VALIDATOR = r"""
import json, os, sys

def validate(doc, data):
    import jsonschema
    meta = json.load(open(os.path.join(data, "meta-schema.json")))
    jst = json.load(open(os.path.join(data, "json-schema-tools-meta-schema.json")))
    uris = ("https://meta.json-schema.tools", "https://meta.json-schema.tools/")
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
        res = Resource.from_contents(jst, default_specification=DRAFT7)
        v = jsonschema.Draft7Validator(meta, registry=Registry().with_resources((u, res) for u in uris))
    except ImportError:  # jsonschema < 4.18 (Debian 12's 4.10)
        resolver = jsonschema.RefResolver.from_schema(meta, store={u: jst for u in uris})
        v = jsonschema.Draft7Validator(meta, resolver=resolver)
    errors = list(v.iter_errors(doc))
    # Every schema in it is itself a valid JSON Schema (draft 7).
    draft7 = jsonschema.Draft7Validator(jsonschema.Draft7Validator.META_SCHEMA)
    for m in doc.get("methods", []):
        for s in [p["schema"] for p in m.get("params", [])] + [m["result"]["schema"]]:
            errors += list(draft7.iter_errors(s))
    return [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors]

if __name__ == "__main__":
    print(json.dumps(validate(json.load(sys.stdin), sys.argv[1])))
"""


def meta_errors(doc):
    """The meta-schema's complaints about `doc` (jsonschema in this
    interpreter, else in /usr/bin/python3)."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        exe = "/usr/bin/python3"
        run = subprocess.run([exe, "-c", VALIDATOR, DATA], input=json.dumps(doc),
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise AssertionError(
                "jsonschema is needed (Debian: python3-jsonschema; make deps): " + run.stderr)
        return json.loads(run.stdout)
    ns = {"__name__": "validator"}
    exec(VALIDATOR, ns)
    return ns["validate"](doc, DATA)


def resolve(doc, schema):
    """A param schema with its "$ref" (or allOf [$ref]) to components/schemas resolved."""
    while True:
        if "allOf" in schema and len(schema["allOf"]) == 1:
            schema = schema["allOf"][0]
        elif "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            schema = doc["components"]["schemas"][name]
        else:
            return schema


def valid_value(doc, schema):
    """A value the schema accepts (to fill the params that are not under test)."""
    schema = resolve(doc, schema)
    if "oneOf" in schema:
        return valid_value(doc, schema["oneOf"][0])
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = t[0]
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
        return float(lo)
    if t == "boolean":
        return False
    if t == "string":
        return "x"
    if t == "array":
        return []
    if t == "object":
        return {k: valid_value(doc, s) for k, s in schema.get("properties", {}).items()
                if k in schema.get("required", [])}
    return 1


def invalid_values(schema):
    """(value, why) pairs just outside what the schema accepts."""
    out = []
    t = schema.get("type")
    if t == "integer":
        if "minimum" in schema:
            out.append((schema["minimum"] - 1, "below minimum"))
        if "maximum" in schema:
            out.append((schema["maximum"] + 1, "above maximum"))
        out.append((1.5, "not an integer"))
    elif t == "number":
        if "minimum" in schema:
            out.append((math.nextafter(schema["minimum"], -math.inf), "below minimum"))
        if "exclusiveMinimum" in schema:
            out.append((schema["exclusiveMinimum"], "at the exclusive minimum"))
        if "maximum" in schema:
            out.append((math.nextafter(schema["maximum"], math.inf), "above maximum"))
        out.append(("1", "a string"))
    elif t == "string":
        out.append((1, "not a string"))
        if "enum" in schema:
            out.append(("no_such_value", "not in the enum"))
    elif t == "boolean":
        out.append((1, "not a boolean"))
    elif t == "array":
        out.append(({}, "not an array"))
        if "maxItems" in schema:
            item = schema.get("items", {})
            out.append(([None] * (schema["maxItems"] + 1) if not item else None, "too many items"))
        if schema.get("items", {}).get("enum"):
            out.append((["no_such_value"], "an item not in the enum"))
        if schema.get("items", {}).get("type") == "integer":
            out.append(([0], "an item below minimum"))
    elif t == "object":
        out.append(([], "not an object"))
    return [(v, why) for v, why in out if v is not None]


class DiscoverCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        c = tickd.Client(cls.daemon.sock, timeout=scale(10.0))
        try:
            cls.doc = c.call("rpc.discover")
            cls.info = c.call("engine.info")
        finally:
            c.close()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def setUp(self):
        self.c = tickd.Client(self.daemon.sock, timeout=scale(10.0))
        self.addCleanup(self.c.close)

    def refused(self, method, params, name, why):
        """`method` with `params` is -32602 and the message names `name`."""
        with self.assertRaises(tickd.TickdError, msg=f"{method} {params} ({why})") as cm:
            self.c.call(method, params)
        self.assertEqual(cm.exception.code, INVALID_PARAMS, f"{method} {params} ({why})")
        self.assertIn(name, cm.exception.message, f"{method} {params} ({why})")

    def test_document_is_valid_openrpc(self):
        self.assertEqual(meta_errors(self.doc), [])
        self.assertEqual(self.doc["info"]["version"], self.info["version"])

    def test_meta_schema_refuses_a_broken_document(self):
        """The check has teeth: a method without params, a negative maxItems
        and an unknown OpenRPC version are not OpenRPC."""
        broken = dict(self.doc, methods=[{"name": "x", "result": {"name": "r", "schema": {}}}])
        self.assertNotEqual(meta_errors(broken), [])
        m = dict(self.doc["methods"][0])
        m["result"] = {"name": "r", "schema": {"type": "array", "maxItems": -1}}
        self.assertNotEqual(meta_errors(dict(self.doc, methods=[m])), [])
        self.assertNotEqual(meta_errors(dict(self.doc, openrpc="9.9.9")), [])

    def test_documents_exactly_the_methods_answered(self):
        documented = [m["name"] for m in self.doc["methods"]]
        self.assertEqual(len(documented), len(set(documented)), "a method documented twice")
        # The daemon's own table (engine.info lists it, in table order).
        self.assertEqual(documented, self.info["methods"])
        self.assertIn("rpc.discover", documented)
        # Each documented method is answered: an unknown param is -32602,
        # never -32601 (and is refused before anything runs: engine.shutdown
        # included).
        for name in documented:
            self.refused(name, {"no_such_param_x": 1}, "no_such_param_x", "unknown param")
        # A name not documented is not answered.
        with self.assertRaises(tickd.TickdError) as cm:
            self.c.call("rpc.no_such_method")
        self.assertEqual(cm.exception.code, METHOD_NOT_FOUND)

    def test_every_documented_constraint_is_enforced(self):
        """For every param of every method: each value just outside its
        schema (range, type, enum, items) is refused naming it, with the
        other required params given valid values."""
        checked = 0
        for m in self.doc["methods"]:
            base = {p["name"]: valid_value(self.doc, p["schema"])
                    for p in m["params"] if p["required"]}
            for p in m["params"]:
                if p["required"]:
                    params = {k: v for k, v in base.items() if k != p["name"]}
                    self.refused(m["name"], params, p["name"], "required, left out")
                    checked += 1
                for value, why in invalid_values(resolve(self.doc, p["schema"])):
                    self.refused(m["name"], dict(base, **{p["name"]: value}), p["name"], why)
                    checked += 1
        self.assertGreater(checked, 100)

    def test_nested_constraints_are_enforced(self):
        schemas = self.doc["components"]["schemas"]
        groups = schemas["tick_spec"]["properties"]["group"]["enum"]
        self.assertIn("post_physics", groups)
        self.assertNotIn("newly_spawned", groups)
        self.refused("entity.spawn", {"class": "counter", "tick": {"group": "newly_spawned"}},
                     "tick.group", "a group not in the enum")
        self.refused("entity.spawn", {"class": "counter", "components": [{}]},
                     "components[0].class", "a required member left out")
        spawn = next(m for m in self.doc["methods"] if m["name"] == "entity.spawn")
        most = next(p for p in spawn["params"] if p["name"] == "components")
        n = most["schema"]["maxItems"]
        self.refused("entity.spawn", {"class": "counter", "components": [{"class": "counter"}] * (n + 1)},
                     "components", "too many components")
        self.refused("timer.set", {"rate": 1, "action": {"method": "world.status", "parms": {}}},
                     "action.parms", "an unknown member")

    def test_boundaries_are_accepted(self):
        """The documented bounds themselves are accepted."""
        params = {m["name"]: {p["name"]: p for p in m["params"]} for m in self.doc["methods"]}
        hz = params["engine.set_tick_rate"]["hz"]["schema"]
        self.assertEqual(self.c.call("engine.set_tick_rate", {"hz": hz["maximum"]})["hz"],
                         hz["maximum"])
        self.c.call("engine.set_tick_rate", {"hz": 0})
        rate = params["timer.set"]["rate"]["schema"]["minimum"]
        handle = self.c.call("timer.set", {"rate": rate, "loop": True})["handle"]
        self.c.call("timer.clear", {"handle": handle})
        limit = params["entity.list"]["limit"]["schema"]
        self.assertEqual(limit["default"], 100)
        self.assertIn("total", self.c.call("entity.list", {"limit": limit["maximum"]}))

    def test_result_schemas_describe_the_results(self):
        """Required members of a few results are there, with their types."""
        types = {"integer": int, "number": (int, float), "boolean": bool, "string": str,
                 "array": list, "object": dict}
        results = {m["name"]: m["result"]["schema"] for m in self.doc["methods"]}
        answers = {
            "engine.info": self.info,
            "engine.stats": self.c.call("engine.stats"),
            "world.status": self.c.call("world.status"),
            "level.list": self.c.call("level.list"),
            "rpc.discover": self.doc,
        }
        for name, answer in answers.items():
            schema = results[name]
            self.assertEqual(schema["type"], "object")
            for key in schema.get("required", []):
                self.assertIn(key, answer, f"{name}: {key}")
                t = schema["properties"][key].get("type")
                if isinstance(t, str) and answer[key] is not None:
                    self.assertIsInstance(answer[key], types[t], f"{name}: {key}")


class DiscoverMaxOutputCase(unittest.TestCase):
    """The document is a normal reply: it fits the smallest max_output."""

    def test_fits_the_smallest_max_output(self):
        d = Daemon({"control.max_output": "65536"})
        self.addCleanup(d.stop)
        c = tickd.Client(d.sock, timeout=scale(10.0))
        self.addCleanup(c.close)
        doc = c.call("rpc.discover")
        self.assertGreater(len(doc["methods"]), 40)
        self.assertLess(len(json.dumps(doc, separators=(",", ":"))), 65536 - 4096)


if __name__ == "__main__":
    unittest.main()
