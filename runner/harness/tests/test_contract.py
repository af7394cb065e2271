"""The contract with the runner: the records the harness writes, and the lists it keeps, against
the JSON Schemas generated from the runner's zod schemas (src/shared/contract, written into
evokernel_harness/contract/ by `npm run contract`; the TypeScript side fails on drift).

The records come from real commands on the CPU, sent through the fork server as the runner
sends them (`serve`, one JSON request a line), so the requests and the server's answers are
held to the contract too. The facts both sides declare (dtypes, initialisations, candidate
formats and their detection, hack classes, reason codes) are compared with the schemas' enums
here, so each is written once on each side and checked across.

Run:  cd runner/harness && PYTHONPATH=. /usr/bin/python3 -m unittest tests.test_contract -v
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import typing
import unittest

import jsonschema

from evokernel_harness import command_request, env, exprs, inputs, options, verify
from evokernel_harness import record as records
from evokernel_harness.candidates import CandidateError, detect_format
from evokernel_harness.command_request import (
    REQUESTS,
    BadRequest,
    field_name,
    is_json_valued,
    parse_command,
    request_fields,
)
from evokernel_harness.commands import COMMANDS

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)
REPO = os.path.normpath(os.path.join(HARNESS, "..", ".."))
CONTRACT = os.path.join(HARNESS, "evokernel_harness", "contract")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
PASSING = os.path.join(SMALL_SOFTMAX, "candidate_ok.py")
CANDIDATES = os.path.join(HERE, "candidates")
SEED = 7
REQUEST = "harness-command.schema.json"
TIMEOUT_S = 1200  # a hang guard only: a loaded 2-core machine is slow, never this slow


def schema(name):
    with open(os.path.join(CONTRACT, name)) as f:
        return json.load(f)


def enum(name):
    return schema(name)["enum"]


def check(instance, name):
    """Raises with the path and the rule when instance breaks the schema."""
    jsonschema.Draft202012Validator(schema(name)).validate(instance)


class ForkServer:
    """`python -m evokernel_harness serve`, spoken to as runner/src/harness/fork-server.ts does."""

    def __init__(self):
        full = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evokernel_harness", "serve"],
            env=full,
            cwd=HARNESS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert json.loads(self.proc.stdout.readline())["ready"]
        self.n = 0
        self.answers = []

    def run(self, **command):
        """One typed request (its fields as keywords), held to the contract's schemas first."""
        self.n += 1
        check(command, REQUEST)
        request = {"id": f"r{self.n}", "request": command, "timeoutS": TIMEOUT_S}
        check(request, "harness-request.schema.json")
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the fork server ended during {command['command']}")
            answer = json.loads(line)
            self.answers.append(answer)
            if "exit" in answer:
                if answer["exit"] != 0:
                    raise AssertionError(f"{command['command']} exited {answer['exit']}:\n{answer['log'][-3000:]}")
                return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=600)
        self.proc.stdout.close()


def load(path):
    with open(path) as f:
        return json.load(f)


class RecordsTest(unittest.TestCase):
    """Every record kind the runner reads, written by the real commands."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

        def out(name):  # a path in the run's folder
            return os.path.join(cls.tmp.name, name)

        server = ForkServer()
        try:
            server.run(command="device", out=out("device.json"))
            server.run(command="inspect", task=SMALL_SOFTMAX, probe=True, out=out("task.json"))
            server.run(command="static-context", task=SMALL_SOFTMAX, out=out("static-context.json"))
            server.run(command="static", candidate=PASSING, task=SMALL_SOFTMAX, relaxed=True, out=out("static.json"))
            server.run(command="build", candidate=PASSING, cache=out("cache"), out=out("build.json"))
            cls.evaluations = {}
            # a pass (quick, verify and the CPU's bench record), a plain wrong result and a hack,
            # both refused at the quick check (the smallest configuration)
            for name, candidate in (
                ("ok", PASSING),
                ("h10", os.path.join(CANDIDATES, "h10_aligned_shapes_only.py")),
                ("h02", os.path.join(CANDIDATES, "h02_inplace_exp.py")),
            ):
                outs = {stage: out(f"{name}-{stage}.json") for stage in ("quick", "verify", "bench")}
                server.run(
                    command="evaluate",
                    device="cpu",
                    seed=SEED,
                    task=SMALL_SOFTMAX,
                    candidate=candidate,
                    quickOut=outs["quick"],
                    verifyOut=outs["verify"],
                    benchOut=outs["bench"],
                )
                cls.evaluations[name] = {stage: load(path) for stage, path in outs.items() if os.path.exists(path)}
        finally:
            server.close()
        cls.answers = server.answers
        cls.records = {
            kind: load(out(f"{kind}.json")) for kind in ("device", "task", "static-context", "static", "build")
        }

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def verify_records(self):
        return [rec for stages in self.evaluations.values() for stage, rec in stages.items() if stage != "bench"]

    def test_the_fork_servers_answers(self):
        self.assertTrue(any("started" in answer for answer in self.answers))
        for answer in self.answers:
            check(answer, "harness-response.schema.json")

    def test_device_record(self):
        check(self.records["device"], "device-record.schema.json")

    def test_task_record(self):
        record = self.records["task"]
        check(record, "task-record.schema.json")
        self.assertTrue(record["ok"], record["error"])
        dtypes = {inp["dtype"] for config in record["configs"] for inp in config["inputs"]}
        self.assertTrue(dtypes <= set(enum("dtype.schema.json")), dtypes)

    def test_static_records(self):
        check(self.records["static-context"], "static-context.schema.json")
        check(self.records["static"], "static-record.schema.json")
        self.assertIn(self.records["static"]["format"], enum("candidate-format.schema.json"))

    def test_build_record(self):
        check(self.records["build"], "build-record.schema.json")

    def test_verify_records(self):
        records = self.verify_records()
        self.assertEqual(len(records), 4)  # ok: quick, verify; h10: quick; h02: quick
        for record in records:
            with self.subTest(candidate=record["candidate"], status=record["status"]):
                check(record, "verify-record.schema.json")
                self.assertEqual(record["ok"], record["status"] == "passed")  # zod's refine, not in JSON Schema

    def test_refusals_carry_a_reason_and_hack_of_the_contract(self):
        hacks = schema("hack-classes.schema.json")["properties"]
        refused = {name: stages["quick"] for name, stages in self.evaluations.items() if name != "ok"}
        # h10 is right on the aligned shapes only: on the quick check's one odd shape, plainly wrong
        self.assertEqual(
            {name: (rec["reason"], rec["hack"]) for name, rec in refused.items()},
            {"h10": ("mismatch", None), "h02": ("input-mutation", 2)},
        )
        for name, record in refused.items():
            with self.subTest(name):
                self.assertIn(record["reason"], enum("reason.schema.json"))
                self.assertEqual(record["hack"], hacks.get(record["reason"], {}).get("const"))

    def test_bench_record(self):
        record = self.evaluations["ok"]["bench"]
        check(record, "bench-record.schema.json")
        self.assertIn(record["reason"], enum("reason.schema.json"))  # the CPU: timing did not run


class RecordTypesTest(unittest.TestCase):
    """record.py's TypedDicts are the schemas' records: every property of the schema is a key,
    every required one required (the harness may always write one the schema lets go), and a
    key the schema does not declare is never required. Each command returns its kind."""

    RETURNS = {
        "device": records.DeviceRecord,
        "static": records.StaticRecord,
        "static-context": records.StaticContextRecord,
        "build": records.BuildRecord,
        "inspect": records.TaskRecord,
        "verify": records.VerifyRecord,
        "bench": records.BenchRecord,
        "ceilings": records.CeilingsRecord,
        "evaluate": type(None),  # it writes a verify and a bench record per stage itself
    }

    def test_each_record_kind_has_its_schemas_fields(self):
        self.assertEqual(len(records.SCHEMAS), 7)
        for name, kind in records.SCHEMAS.items():
            with self.subTest(schema=name):
                declared = schema(name)
                keys = set(typing.get_type_hints(kind))
                required = set(kind.__required_keys__)
                self.assertLessEqual(set(declared["properties"]), keys, "properties the TypedDict lacks")
                self.assertLessEqual(set(declared["required"]), required, "required by the schema, not here")
                self.assertLessEqual(required, set(declared["properties"]), "required here, unknown to the schema")
                kind_const = declared["properties"]["kind"]["const"]
                self.assertEqual(typing.get_args(typing.get_type_hints(kind)["kind"]), (kind_const,))

    def test_each_command_returns_its_record_kind(self):
        self.assertEqual(sorted(self.RETURNS), sorted(COMMANDS))
        for name, function in COMMANDS.items():
            with self.subTest(command=name):
                self.assertIs(typing.get_type_hints(function)["return"], self.RETURNS[name])


class ListsTest(unittest.TestCase):
    """The harness's own lists are the contract's."""

    def test_dtypes(self):
        self.assertEqual(sorted(env.DTYPES), sorted(enum("dtype.schema.json")))
        self.assertEqual(sorted(env.dtype_name(d) for d in env.FLOAT_DTYPES), sorted(enum("float-dtype.schema.json")))
        self.assertTrue(set(enum("task-dtype.schema.json")) <= set(env.DTYPES))

    def test_inits(self):
        self.assertEqual(list(inputs.INITS), enum("init.schema.json"))

    def test_hack_classes(self):
        check(verify.HACKS, "hack-classes.schema.json")
        self.assertTrue(set(verify.HACKS) <= set(enum("reason.schema.json")))

    def test_candidate_formats_are_detected_as_the_runner_detects_them(self):
        formats = set(enum("candidate-format.schema.json"))
        for case in schema("format-detection.json")["cases"]:
            with self.subTest(file=case["file"], source=case["source"]):
                if case["format"] is None:
                    with self.assertRaises(CandidateError):
                        detect_format(case["file"], case["source"])
                else:
                    self.assertIn(case["format"], formats)
                    self.assertEqual(detect_format(case["file"], case["source"]), case["format"])


class ExpressionGrammarTest(unittest.TestCase):
    """task.json's arithmetic is the contract's grammar (expression-grammar.json): exprs.py
    gives what the runner's parser gives (test/shared/contract/contract.test.ts) on every shared case."""

    def test_each_case_gives_its_value_or_an_error(self):
        for case in schema("expression-cases.json")["cases"]:
            with self.subTest(source=case["source"]):
                if "error" in case:
                    with self.assertRaises(exprs.ExprError):
                        exprs.evaluate(case["source"], case["dims"])
                else:
                    self.assertEqual(exprs.evaluate(case["source"], case["dims"]), case["value"])

    def test_the_cases_use_every_operator_of_the_grammar(self):
        grammar = schema("expression-grammar.json")
        declared = {op for level in grammar["binary"] for op in level} | {grammar["power"], grammar["unary"]}
        valid = [case["source"] for case in schema("expression-cases.json")["cases"] if "value" in case]
        self.assertEqual(sorted(op for op in declared if not any(op in source for source in valid)), [])


class TaskSchemaTest(unittest.TestCase):
    """task.json's rules are the zod schema's (task.schema.json, generated into the contract
    folder by `npm run schema`): a task the schema accepts loads here, with its defaults. Before,
    the harness required "reference", which the schema defaults to reference.py, and refused a
    task the CLI had accepted."""

    def write_task(self, tmp, spec):
        with open(os.path.join(tmp, "task.json"), "w") as f:
            json.dump(spec, f)
        with open(os.path.join(tmp, "reference.py"), "w") as f:
            f.write("def forward(x):\n    return x * 2\n")

    SPEC = {
        "name": "twice",
        "inputs": [{"name": "x", "shape": ["N"], "dtype": "float32"}],
        "configs": [{"name": "a", "dims": {"N": 4}}, {"name": "b", "dims": {"N": 8}}],
    }

    def test_a_task_with_only_the_required_fields_loads_with_the_defaults(self):
        from evokernel_harness.tasks import load_task

        check(self.SPEC, "task.schema.json")  # valid to the schema itself
        with tempfile.TemporaryDirectory() as tmp:
            self.write_task(tmp, self.SPEC)
            task = load_task(tmp)
        self.assertEqual(task.reference_path, os.path.join(os.path.realpath(tmp), "reference.py"))
        self.assertEqual((task.backward, task.libraries), (False, "allow"))

    def test_each_required_field_is_the_schemas(self):
        from evokernel_harness.tasks import TaskError, load_task

        self.assertEqual(schema("task.schema.json")["required"], ["name", "inputs", "configs"])
        for key in schema("task.schema.json")["required"]:
            with self.subTest(missing=key), tempfile.TemporaryDirectory() as tmp:
                self.write_task(tmp, {k: v for k, v in self.SPEC.items() if k != key})
                with self.assertRaisesRegex(TaskError, f"missing required field '{key}'"):
                    load_task(tmp)

    def test_an_inputs_required_fields_are_the_schemas(self):
        from evokernel_harness.tasks import TaskError, load_task

        with tempfile.TemporaryDirectory() as tmp:
            self.write_task(tmp, {**self.SPEC, "inputs": [{"name": "x", "shape": ["N"]}]})
            with self.assertRaisesRegex(TaskError, "input 'x': missing required field 'dtype'"):
                load_task(tmp)

    def test_the_libraries_rule_takes_the_schemas_values(self):
        from evokernel_harness.tasks import TaskError, load_task

        with tempfile.TemporaryDirectory() as tmp:
            self.write_task(tmp, {**self.SPEC, "libraries": "forbid"})
            with self.assertRaisesRegex(TaskError, "one of allow, deny, not 'forbid'"):
                load_task(tmp)


class RequestGrammarTest(unittest.TestCase):
    """One command, one grammar, in four places that this test holds together: the contract's
    typed request (harness-command.schema.json, from harness-request.ts), the command's request
    dataclass (command_request.REQUESTS), its command line (options.py) and its function
    (commands.COMMANDS). Each has the same commands, each command the same fields (camelCased
    for the request), required alike, of the same kind, with the same defaults, so a request
    reaches the command functions with what its flags would give. A command added in one place
    and not the others fails here."""

    def kind(self, action):
        if isinstance(action, argparse._StoreTrueAction):
            return {"type": "boolean"}
        if isinstance(action, argparse._AppendAction):
            return {"type": "array", "items": {"type": "string"}}
        if action.choices is not None:
            return {"type": "string", "enum": list(action.choices)}
        return {"type": {int: "integer", float: "number"}.get(action.type, "string")}

    def field_kind(self, hint):
        """A dataclass field's kind, as the schema writes it."""
        hint = command_request.field_type(hint)
        if typing.get_origin(hint) is typing.Literal:
            return {"type": "string", "enum": list(typing.get_args(hint))}
        if typing.get_origin(hint) is list:
            return {"type": "array", "items": {"type": "string"}}
        return {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[hint]}

    def declared(self):
        return {branch["properties"]["command"]["const"]: branch for branch in schema(REQUEST)["oneOf"]}

    def options(self, parser):
        """A command line's options, by their field in a typed request."""
        return {field_name(a.dest): a for a in parser._actions if a.option_strings and a.dest != "help"}

    def test_the_same_commands_everywhere(self):
        declared = sorted(self.declared())
        self.assertEqual(sorted(options.commands()), declared, "options.py's commands")
        self.assertEqual(sorted(REQUESTS), declared, "command_request.py's requests")
        self.assertEqual(sorted(COMMANDS), declared, "commands.COMMANDS")

    def test_each_command_takes_the_options_of_its_command_line(self):
        declared = self.declared()
        for name, parser in options.commands().items():
            with self.subTest(command=name):
                branch = declared[name]
                actions = self.options(parser)
                self.assertEqual(sorted(branch["properties"]), sorted([*actions, "command"]))
                required = sorted(field for field, a in actions.items() if a.required)
                self.assertEqual(sorted(branch["required"]), sorted([*required, "command"]))
                self.assertFalse(branch["additionalProperties"])
                json_valued = {key for key, f in request_fields(REQUESTS[name]).items() if is_json_valued(f)}
                for field, action in actions.items():
                    declared_kind = branch["properties"][field]
                    if field in json_valued:  # JSON text on the command line
                        self.assertIn(declared_kind["type"], ("array", "object"), field)
                        continue
                    self.assertEqual({k: declared_kind[k] for k in self.kind(action)}, self.kind(action), field)

    def test_each_commands_dataclass_has_its_schemas_fields(self):
        declared = self.declared()
        for name, cls in REQUESTS.items():
            with self.subTest(command=name):
                branch = declared[name]
                fields = request_fields(cls)
                self.assertEqual(sorted(branch["properties"]), sorted([*fields, "command"]))
                required = sorted(key for key, f in fields.items() if command_request.required(f))
                self.assertEqual(sorted(branch["required"]), sorted([*required, "command"]))
                hints = typing.get_type_hints(cls)
                for key, f in fields.items():
                    declared_kind = branch["properties"][key]
                    if is_json_valued(f):  # held as JSON text, a JSON value in a request
                        self.assertIn(declared_kind["type"], ("array", "object"), key)
                        self.assertEqual(command_request.field_type(hints[f.name]), str, key)
                        continue
                    kind = self.field_kind(hints[f.name])
                    self.assertEqual({k: declared_kind[k] for k in kind}, kind, key)

    def test_each_commands_function_takes_its_dataclass(self):
        for name, function in COMMANDS.items():
            with self.subTest(command=name):
                first = next(iter(inspect.signature(function).parameters))
                self.assertIs(typing.get_type_hints(function)[first], REQUESTS[name])

    def test_the_defaults_are_the_command_lines(self):
        declared = self.declared()
        for name, parser in options.commands().items():
            with self.subTest(command=name):
                needed = {key: "x" for key in declared[name]["required"] if key != "command"}
                argv = [name]
                for key, value in needed.items():
                    argv += [self.options(parser)[key].option_strings[0], value]
                self.assertEqual(parse_command({"command": name, **needed}), options.parse_request(argv))

    def test_the_schema_refuses_what_the_harness_refuses(self):
        for request in (
            {"command": "serve"},
            {"command": "device", "task": "t"},
            {"command": "verify"},
            {"command": "verify", "task": "t", "seed": "7"},
            {"command": "evaluate", "task": "t", "candidate": "c"},
        ):
            with self.subTest(request=request):
                with self.assertRaises(jsonschema.ValidationError):
                    check(request, REQUEST)
                with self.assertRaises(BadRequest):
                    parse_command(request)


if __name__ == "__main__":
    unittest.main()
