"""The CPU fork server (`serve --cpu`, server.serve_cpu): static checks and builds, each in a
child forked at once, many in flight, each answered as it ends (a slow build does not hold a
quick static check back); any other command is refused for its id; a child past its deadline is
killed with the nvcc it started (same session: build.py's _own_group), and nothing of it
is left running; every request is answered before the server exits at the end of its input."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))
KERNEL = os.path.normpath(os.path.join(HARNESS, "..", "..", "kernels", "softmax", "kernel.cu"))


def request(id, command, timeout_s=120.0):
    return json.dumps({"id": id, "request": command, "timeoutS": timeout_s})


def alive(pid):
    """Whether pid runs (a killed process its parent has not reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


class CpuServerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="evk-cpu-server-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def serve(self, lines, path=None):
        """The server's answer lines to these request lines, then the end of its input."""
        env = {**os.environ, "PYTHONPATH": HARNESS, **({} if path is None else {"PATH": path})}
        proc = subprocess.Popen(
            [sys.executable, "-m", "evokernel_harness", "serve", "--cpu"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write("".join(line + "\n" for line in lines))
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=300)
        answers = [json.loads(line) for line in out.splitlines() if line.strip()]
        self.assertEqual(answers[0].get("ready"), True)
        return [a for a in answers[1:] if "exit" in a or "error" in a]

    def static(self, id):
        return request(id, {"command": "static", "candidate": KERNEL, "out": os.path.join(self.dir, f"{id}.json")})

    def build(self, id, define, timeout_s=120.0):
        command = {
            "command": "build",
            "candidate": KERNEL,
            "cache": os.path.join(self.dir, "cache"),
            "defines": [define],
            "out": os.path.join(self.dir, f"{id}.json"),
        }
        return request(id, command, timeout_s)

    @unittest.skipUnless(shutil.which("nvcc"), "nvcc is not installed")
    def test_requests_run_at_once_and_are_answered_as_they_end(self):
        answers = self.serve([self.build("b1", "VEC=4"), self.build("b2", "VEC=1"), self.static("s")])
        self.assertEqual([a["id"] for a in answers][0], "s", answers)  # sent last, answered first
        self.assertEqual({a["id"] for a in answers}, {"b1", "b2", "s"})
        self.assertTrue(all(a["exit"] == 0 for a in answers), answers)
        for id in ("b1", "b2"):
            with open(os.path.join(self.dir, f"{id}.json")) as f:
                self.assertTrue(json.load(f)["ok"])
        with open(os.path.join(self.dir, "s.json")) as f:
            self.assertTrue(json.load(f)["ok"])

    def test_other_commands_are_refused_for_their_id(self):
        answers = self.serve([request("d", {"command": "device", "out": os.path.join(self.dir, "d.json")})])
        self.assertEqual(len(answers), 1)
        self.assertEqual(answers[0]["id"], "d")
        self.assertEqual(answers[0]["exit"], 2)
        self.assertIn("static and build only", answers[0]["log"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "d.json")))

    def test_a_child_past_its_deadline_goes_with_the_nvcc_it_started(self):
        # an nvcc that would run for a minute, with a child of its own, each writing its pid
        fake = os.path.join(self.dir, "bin")
        os.makedirs(fake)
        pids = os.path.join(self.dir, "pids")
        with open(os.path.join(fake, "nvcc"), "w") as f:
            f.write(f"#!/bin/sh\necho $$ >> {pids}\nsleep 60 &\necho $! >> {pids}\nwait\n")
        os.chmod(os.path.join(fake, "nvcc"), 0o755)
        path = f"{fake}:{os.environ.get('PATH', '')}"
        answers = self.serve([self.build("slow", "VEC=2", timeout_s=1.0), self.static("s")], path=path)
        slow = next(a for a in answers if a["id"] == "slow")
        self.assertTrue(slow["timedOut"], slow)
        self.assertEqual(slow["signal"], 9)
        self.assertEqual(next(a for a in answers if a["id"] == "s")["exit"], 0)
        with open(pids) as f:
            started = [int(line) for line in f if line.strip()]
        self.assertEqual(len(started), 2, "the fake nvcc did not start its child")
        self.assertEqual([pid for pid in started if alive(pid)], [], "the killed build's nvcc is still running")


if __name__ == "__main__":
    unittest.main()
