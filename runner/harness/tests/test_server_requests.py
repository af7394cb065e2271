"""The fork server's requests (server.py): each line parsed once into a Request; a line that is
not one is answered "bad request" and the server goes on; the command line a request carries
is run by the child through commands.run_request, which refuses to start another server."""

import json
import os
import subprocess
import sys
import unittest

from evokernel_harness.server import Request, parse_request

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))


class ParseRequestTest(unittest.TestCase):
    def test_a_request_line_becomes_a_request(self):
        line = json.dumps({"id": "r1", "argv": ["device", "--out", "x.json"], "timeoutS": 5})
        self.assertEqual(parse_request(line), Request("r1", ["device", "--out", "x.json"], 5.0))

    def test_defaults_as_before(self):
        self.assertEqual(parse_request('{"argv": []}'), Request(None, [], 300.0))

    def test_what_is_not_a_request(self):
        for line in ('{"argv": "device"}', '{"argv": [1]}', "not json", '{"argv": [], "timeoutS": [1]}'):
            with self.subTest(line=line), self.assertRaises(ValueError):
                parse_request(line)
        with self.assertRaises(AttributeError):
            parse_request("[]")


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
        answer = self.send({"id": "r1", "argv": ["device"], "timeoutS": "soon"})
        self.assertEqual(answer, {"id": None, "error": "bad request: timeoutS must be a number"})
        self.assertEqual(self.send({"id": "r2", "argv": ["device"], "timeoutS": 120})["exit"], 0)

    def test_a_request_cannot_start_another_server(self):
        # the child shares the server's stdin: a second server there would read its requests
        answer = self.send({"id": "r1", "argv": ["serve"], "timeoutS": 120})
        self.assertEqual((answer["exit"], answer["timedOut"]), (2, False))
        self.assertIn("serve is the fork server itself, not a request", answer["log"])
        self.assertEqual(self.send({"id": "r2", "argv": ["device"], "timeoutS": 120})["exit"], 0)


if __name__ == "__main__":
    unittest.main()
