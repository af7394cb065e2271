"""The fork server's long-lived worker (worker.py), on the CPU: `evaluate` requests reuse one
process while they stay clean, give the records a fresh child gives, and a candidate that is
not ok, crashes, hangs or is the last of a worker's quota gets the next request a new one; a
server that ends takes its worker with it."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
PASSING = os.path.join(SMALL_SOFTMAX, "candidate_ok.py")
QUICK_FAIL = os.path.join(HERE, "candidates", "h10_aligned_shapes_only.py")
TIMING = ("seconds", "phases")

CRASH = """import os

import torch


def forward(x):
    os.abort()
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
"""
HANG = """import time

import torch


def forward(x):
    time.sleep(3600)
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Server:
    def __init__(self, **env):
        self.tmp = tempfile.mkdtemp()
        full = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off", **env}
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

    def evaluate(self, candidate, timeout=1200, seed=7):
        self.n += 1
        outs = {s: os.path.join(self.tmp, f"{self.n}-{s}.json") for s in ("quick", "verify", "bench")}
        request = {
            "command": "evaluate",
            "device": "cpu",
            "seed": seed,
            "task": SMALL_SOFTMAX,
            "candidate": candidate,
            "quickOut": outs["quick"],
            "verifyOut": outs["verify"],
            "benchOut": outs["bench"],
        }
        self.proc.stdin.write(json.dumps({"id": f"r{self.n}", "request": request, "timeoutS": timeout}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = json.loads(self.proc.stdout.readline())
            if "exit" in line:
                break
        records = {}
        for stage, path in outs.items():
            if os.path.exists(path):
                with open(path) as f:
                    records[stage] = {k: v for k, v in json.load(f).items() if k not in TIMING}
        return line, records

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=600)


class WorkerTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.files = tempfile.mkdtemp()

    def tearDown(self):
        if self.server.proc.poll() is None:
            self.server.close()

    def write(self, name, text):
        path = os.path.join(self.files, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_clean_requests_reuse_one_worker_and_give_a_fresh_childs_records(self):
        answers = [self.server.evaluate(PASSING) for _ in range(3)]
        self.assertEqual([a["exit"] for a, _ in answers], [0, 0, 0])
        self.assertEqual([a["reused"] for a, _ in answers], [False, True, True])
        self.assertEqual(len({a["worker"] for a, _ in answers}), 1)
        fresh = Server(EVOKERNEL_WORKER="0")
        try:
            answer, records = fresh.evaluate(PASSING)
        finally:
            fresh.close()
        self.assertNotIn("worker", answer)
        self.assertTrue(records["verify"]["ok"], records["verify"]["message"])
        for _, got in answers:
            self.assertEqual(got, records)

    def test_a_candidate_that_is_not_ok_retires_the_worker(self):
        first, _ = self.server.evaluate(PASSING)
        failed, records = self.server.evaluate(QUICK_FAIL)
        self.assertFalse(records["quick"]["ok"])
        self.assertTrue(failed["reused"])
        after, records = self.server.evaluate(PASSING)
        self.assertFalse(after["reused"])
        self.assertNotEqual(after["worker"], first["worker"])
        self.assertFalse(alive(first["worker"]))
        self.assertTrue(records["verify"]["ok"])

    def test_a_crash_is_the_candidates_and_the_next_request_gets_a_new_worker(self):
        first, _ = self.server.evaluate(PASSING)
        crashed, records = self.server.evaluate(self.write("crash.py", CRASH))
        self.assertEqual(crashed["signal"], 6)  # SIGABRT
        self.assertIsNone(crashed["exit"])
        self.assertNotIn("verify", records)
        after, records = self.server.evaluate(PASSING)
        self.assertEqual((after["exit"], after["reused"]), (0, False))
        self.assertNotEqual(after["worker"], first["worker"])
        self.assertTrue(records["verify"]["ok"])

    def test_a_hang_times_out_and_the_next_request_gets_a_new_worker(self):
        first, _ = self.server.evaluate(PASSING)
        started = time.perf_counter()
        hung, _ = self.server.evaluate(self.write("hang.py", HANG), timeout=8)
        self.assertTrue(hung["timedOut"])
        self.assertLess(time.perf_counter() - started, 60)
        self.assertFalse(alive(first["worker"]))
        after, records = self.server.evaluate(PASSING)
        self.assertEqual((after["exit"], after["reused"]), (0, False))
        self.assertTrue(records["verify"]["ok"])

    def test_the_worker_ends_with_its_server(self):
        answer, _ = self.server.evaluate(PASSING)
        self.assertTrue(alive(answer["worker"]))
        self.server.close()
        deadline = time.time() + 30
        while alive(answer["worker"]) and time.time() < deadline:
            time.sleep(0.1)
        self.assertFalse(alive(answer["worker"]))

    def test_other_commands_still_get_a_fresh_child(self):
        answer, _ = self.server.evaluate(PASSING)
        self.server.n += 1
        out = os.path.join(self.server.tmp, "v.json")
        request = {
            "command": "verify",
            "device": "cpu",
            "seed": 7,
            "task": SMALL_SOFTMAX,
            "candidate": PASSING,
            "out": out,
        }
        self.server.proc.stdin.write(json.dumps({"id": "v", "request": request, "timeoutS": 120}) + "\n")
        self.server.proc.stdin.flush()
        while True:
            line = json.loads(self.server.proc.stdout.readline())
            if "exit" in line:
                break
        self.assertEqual(line["exit"], 0)
        self.assertNotIn("worker", line)
        again, _ = self.server.evaluate(PASSING)
        self.assertEqual((again["reused"], again["worker"]), (True, answer["worker"]))


class WarmStateTest(unittest.TestCase):
    """The server's imports (torch, torch._dynamo, the harness) are frozen out of the garbage
    collector before it forks: the collections a worker makes between stages and candidates
    walk only what it made itself, not torch's objects (tenths of a second a candidate)."""

    def test_a_forked_child_collects_only_its_own_objects(self):
        script = """
import gc, json, os
from evokernel_harness.server import warm
warm()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    own = [[i] for i in range(1000)]  # what a request makes
    os.write(w, json.dumps([gc.get_freeze_count(), len(gc.get_objects())]).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 1000).decode())
"""
        env = {**os.environ, "PYTHONPATH": HARNESS}
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=HARNESS, capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        frozen, walked = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertGreater(frozen, 10 * walked)  # without the freeze: 0 frozen, all walked
        self.assertGreaterEqual(walked, 1000)  # its own objects are still collected


class InheritedLockTest(unittest.TestCase):
    """The server holds the GPU's flock while a request runs, and forks the worker then: a lock
    stays held while any process keeps a descriptor of it, so the worker must not keep the
    server's (on the H100 the second evaluate waited for the lock forever)."""

    def test_the_server_can_take_the_gpu_lock_again_while_its_worker_lives(self):
        import fcntl

        from evokernel_harness import server
        from evokernel_harness.command_request import parse_command
        from evokernel_harness.worker import Worker

        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "gpu-0.lock")
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)  # as the server holds it around a request
            worker = Worker(server._rss_bytes, server.MEM_LIMIT)
            outs = {s: os.path.join(tmp, f"{s}.json") for s in ("quick", "verify", "bench")}
            args = parse_command(
                {
                    "command": "evaluate",
                    "device": "cpu",
                    "seed": 7,
                    "task": SMALL_SOFTMAX,
                    "candidate": PASSING,
                    "quickOut": outs["quick"],
                    "verifyOut": outs["verify"],
                    "benchOut": outs["bench"],
                }
            )
            try:
                answer = worker.run(args, 120, os.path.join(tmp, "log"))
                self.assertEqual(answer["exit"], 0)
                os.close(fd)  # the request ended: the server lets go
                again = os.open(lock, os.O_RDWR)
                try:
                    fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the worker kept it
                finally:
                    os.close(again)
                self.assertIsNotNone(worker.pid)  # the worker is alive and holds nothing
            finally:
                worker.stop()


if __name__ == "__main__":
    unittest.main()
