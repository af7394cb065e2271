"""The harness's typed requests: the fork server's request lines (server.py), each parsed once
into a Request whose command is the typed request the command line gives (command_request.py); a
line that is not a request is answered "bad request" and the server goes on; a request whose
command is not one is answered for its id, exit 2, as a usage error. `request JSON` on the
command line takes the same typed request."""

import json
import os
import subprocess
import sys
import unittest

from evokernel_harness.command_request import BadRequest, DeviceRequest, parse_command
from evokernel_harness.options import parse_request as parse
from evokernel_harness.server import BadCommand, Request, parse_request

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))
OUTS = {"quickOut": "q.json", "verifyOut": "v.json", "benchOut": "b.json"}

# Each command with every option the runner sends, as a typed request and as the command line.
SAME = [
    ({"command": "device", "out": "d.json"}, ["device", "--out", "d.json"]),
    ({"command": "ceilings"}, ["ceilings"]),
    ({"command": "inspect", "task": "t", "probe": True}, ["inspect", "--task", "t", "--probe"]),
    ({"command": "static-context", "task": "t"}, ["static-context", "--task", "t"]),
    (
        {"command": "static", "candidate": "c", "referenceOps": ["aten::add"], "libraries": "deny", "relaxed": True},
        ["static", "--candidate", "c", "--reference-ops", '["aten::add"]', "--libraries", "deny", "--relaxed"],
    ),
    (
        {"command": "build", "candidate": "c", "cache": "k", "defines": ["B=512", "V=4"], "nvccFlags": ["-O3"]},
        ["build", "--candidate", "c", "--cache", "k", "--define", "B=512", "--define", "V=4", "--nvcc-flag=-O3"],
    ),
    (
        {"command": "verify", "task": "t", "candidate": "c", "artifact": "a", "heldout": True, "quick": True}
        | {"device": "cpu", "seed": 7},
        ["verify", "--task", "t", "--candidate", "c", "--artifact", "a", "--heldout", "--quick"]
        + ["--device", "cpu", "--seed", "7"],
    ),
    (
        {"command": "bench", "task": "t", "candidate": "c", "baseline": "b", "baselineArtifact": "ba"}
        | {"noCompile": True, "budget": 2, "ceilings": "x.json"},
        ["bench", "--task", "t", "--candidate", "c", "--baseline", "b", "--baseline-artifact", "ba"]
        + ["--no-compile", "--budget", "2", "--ceilings", "x.json"],
    ),
    (
        {"command": "evaluate", "task": "t", "candidate": "c", "seed": 3, "race": {"8192x8192": 1.25}}
        | {"raceCeilings": {"8192x8192": 1.4}}
        | OUTS,
        ["evaluate", "--task", "t", "--candidate", "c", "--seed", "3", "--race", '{"8192x8192": 1.25}']
        + ["--race-ceilings", '{"8192x8192": 1.4}']
        + ["--quick-out", "q.json", "--verify-out", "v.json", "--bench-out", "b.json"],
    ),
]


class ParseCommandTest(unittest.TestCase):
    def test_a_typed_request_is_what_the_command_line_gives(self):
        for request, argv in SAME:
            with self.subTest(command=request["command"]):
                self.assertEqual(parse_command(request), parse(argv))

    def test_defaults_are_the_command_lines(self):
        args = parse_command({"command": "verify", "task": "t"})
        self.assertEqual((args.device, args.trials, args.heldout, args.defines), ("cuda", 2, False, None))
        self.assertEqual(parse_command({"command": "bench", "task": "t"}).budget, 1.5)

    def test_what_is_not_a_request(self):
        for request, why in (
            ([], "a request is a JSON object"),
            ({}, "unknown command None"),
            ({"command": "serve"}, "unknown command 'serve'"),
            ({"command": "request", "json": "{}"}, "unknown command 'request'"),
            ({"command": "device", "task": "t"}, "device takes no task"),
            ({"command": "verify"}, "verify needs task"),
            ({"command": "verify", "task": 1}, "task must be a string"),
            ({"command": "verify", "task": "t", "seed": "7"}, "seed must be an integer"),
            ({"command": "verify", "task": "t", "seed": True}, "seed must be an integer"),
            ({"command": "verify", "task": "t", "heldout": 1}, "heldout must be true or false"),
            ({"command": "verify", "task": "t", "device": "tpu"}, "device must be one of cuda, cpu"),
            ({"command": "bench", "task": "t", "budget": "1"}, "budget must be a number"),
            ({"command": "build", "candidate": "c", "defines": "B=1"}, "defines must be a list of strings"),
            ({"command": "evaluate", "task": "t", "candidate": "c"}, "evaluate needs quickOut"),
            ({"command": "evaluate", "task": "t", "candidate": "c", "out": "o"} | OUTS, "evaluate takes no out"),
        ):
            with self.subTest(request=request), self.assertRaises(BadRequest) as caught:
                parse_command(request)
            self.assertIn(why, str(caught.exception))


class ParseRequestTest(unittest.TestCase):
    def test_a_request_line_becomes_a_request(self):
        line = json.dumps({"id": "r1", "request": {"command": "device", "out": "x.json"}, "timeoutS": 5})
        expected = DeviceRequest(out="x.json")
        self.assertEqual(parse_request(line), Request("r1", expected, 5.0))

    def test_defaults_as_before(self):
        self.assertEqual(parse_request('{"request": {"command": "ceilings"}}').timeout_s, 300.0)

    def test_what_is_not_a_request(self):
        for line in ("not json", '{"request": {"command": "device"}, "timeoutS": [1]}'):
            with self.subTest(line=line), self.assertRaises(ValueError):
                parse_request(line)
        with self.assertRaises(AttributeError):
            parse_request("[]")

    def test_a_command_that_is_not_one_is_answered_for_its_id(self):
        for line, id in (
            ('{"id": "r1", "argv": ["device"]}', "r1"),  # the old shape
            ('{"id": 3, "request": {"command": "dev"}}', None),
        ):
            with self.subTest(line=line), self.assertRaises(BadCommand) as caught:
                parse_request(line)
            self.assertEqual(caught.exception.id, id)


class ServerRequestsTest(unittest.TestCase):
    def setUp(self):
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off", "EVOKERNEL_WORKER": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evokernel_harness", "serve"],
            env=env,
            cwd=HARNESS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.assertTrue(json.loads(self.proc.stdout.readline())["ready"])

    def tearDown(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)

    def send(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = json.loads(self.proc.stdout.readline())
            if "exit" in line or "error" in line:
                return line

    def test_a_timeout_that_is_not_a_number_is_a_bad_request_and_the_server_goes_on(self):
        answer = self.send({"id": "r1", "request": {"command": "device"}, "timeoutS": "soon"})
        self.assertEqual(answer, {"id": None, "error": "bad request: timeoutS must be a number"})
        self.assertEqual(self.send({"id": "r2", "request": {"command": "device"}, "timeoutS": 120})["exit"], 0)

    def test_a_request_cannot_start_another_server(self):
        # the child shares the server's stdin: a second server there would read its requests
        answer = self.send({"id": "r1", "request": {"command": "serve"}, "timeoutS": 120})
        self.assertEqual((answer["id"], answer["exit"], answer["timedOut"]), ("r1", 2, False))
        self.assertIn("bad request: unknown command 'serve'", answer["log"])
        self.assertEqual(self.send({"id": "r2", "request": {"command": "device"}, "timeoutS": 120})["exit"], 0)

    def test_an_unknown_field_is_answered_exit_2_and_the_server_goes_on(self):
        answer = self.send({"id": "r1", "request": {"command": "device", "gpu": 0}, "timeoutS": 120})
        self.assertEqual((answer["id"], answer["exit"]), ("r1", 2))
        self.assertEqual(answer["log"], "bad request: device takes no gpu\n")
        self.assertEqual(self.send({"id": "r2", "request": {"command": "device"}, "timeoutS": 120})["exit"], 0)


class CommandLineRequestTest(unittest.TestCase):
    """`python -m evokernel_harness request JSON`: the runner's road without a fork server."""

    def harness(self, *argv):
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        return subprocess.run(
            [sys.executable, "-m", "evokernel_harness", *argv], env=env, cwd=HARNESS, capture_output=True, text=True
        )

    def test_a_request_runs_its_command(self):
        ran = self.harness("request", json.dumps({"command": "device"}))
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertEqual(json.loads(ran.stdout)["kind"], "device")

    def test_a_bad_request_exits_2_with_its_reason_and_no_traceback(self):
        for text, why in (
            ('{"command": "device", "seed": 1}', "bad request: device takes no seed"),
            ("device", "bad request: not JSON"),
            ('{"command": "verify", "task": "t", "trials": 2.5}', "bad request: trials must be an integer"),
        ):
            with self.subTest(text=text):
                ran = self.harness("request", text)
                self.assertEqual(ran.returncode, 2)
                self.assertIn(why, ran.stderr)
                self.assertNotIn("Traceback", ran.stderr)


if __name__ == "__main__":
    unittest.main()
