"""The machine-wide GPU lock (evokernel_harness/gpulock.py): GPU commands of two processes
never overlap; CPU commands and children of a server that holds the lock do not take it."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))

HOLD = """
import sys, time
from evokernel_harness import gpulock
with gpulock.held_for_gpu_work(True, on_wait=lambda: print("waited", flush=True)):
    print("in", time.time(), flush=True)
    time.sleep(float(sys.argv[1]))
    print("out", time.time(), flush=True)
"""


class GpuLockTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.env = dict(os.environ, EVOKERNEL_GPU_LOCKS=self.dir.name, PYTHONPATH=HARNESS)
        self.env.pop("EVOKERNEL_GPU_LOCK_HELD", None)

    def tearDown(self):
        self.dir.cleanup()

    def test_two_processes_take_turns(self):
        first = subprocess.Popen([sys.executable, "-c", HOLD, "0.8"], env=self.env, stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        second = subprocess.Popen([sys.executable, "-c", HOLD, "0.1"], env=self.env, stdout=subprocess.PIPE, text=True)
        a, b = first.communicate(timeout=300)[0].split("\n"), second.communicate(timeout=300)[0].split("\n")
        a_out = float(next(line for line in a if line.startswith("out")).split()[1])
        b_in = float(next(line for line in b if line.startswith("in")).split()[1])
        self.assertIn("waited", b)
        self.assertGreaterEqual(b_in, a_out)

    @unittest.skipUnless(hasattr(os, "getuid") and os.getuid() == 0, "needs root to act as two users")
    def test_a_lock_file_another_user_made_still_locks(self):
        """The app's local runner (its own uid) and a root CLI's sandbox (another) share the
        folder: the one that comes second opens the other's lock file, mode 0644."""
        os.chmod(self.dir.name, 0o1777)
        path = os.path.join(self.dir.name, "gpu-0.lock")
        with open(path, "w"):
            pass
        os.chown(path, 60999, 60999)
        os.chmod(path, 0o644)
        # the module alone (it imports only the standard library), where the other user can
        # read it whatever the checkout's folders allow
        code = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(code, ignore_errors=True))
        os.chmod(code, 0o755)
        with open(os.path.join(HARNESS, "evokernel_harness", "gpulock.py")) as f:
            source = f.read()
        with open(os.path.join(code, "gpulock.py"), "w") as f:
            f.write(source)
        os.chmod(os.path.join(code, "gpulock.py"), 0o644)
        proc = subprocess.run(
            [sys.executable, "-c", HOLD.replace("from evokernel_harness import gpulock", "import gpulock"), "0"],
            env=dict(self.env, PYTHONPATH=code),
            cwd=code,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            user=60997,
            group=60997,
            extra_groups=[],
        )
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("in", proc.stdout)

    def test_cpu_commands_and_held_children_take_no_lock(self):
        from evokernel_harness.options import parse_request as parse

        self.assertFalse(parse(["verify", "--device", "cpu", "--task", "t"]).gpu_work)
        self.assertFalse(parse(["static", "--candidate", "c"]).gpu_work)
        self.assertTrue(parse(["bench", "--task", "t"]).gpu_work)
        self.assertTrue(parse(["verify", "--device", "cuda", "--task", "t"]).gpu_work)
        self.assertTrue(parse(["verify", "--task", "t"]).gpu_work)
        self.assertTrue(parse(["ceilings"]).gpu_work)

    def test_bench_warm_compile_compiles_before_it_takes_the_lock(self):
        # the reference's torch.compile warm-up (10-13 s on the H100) runs beside a search: the
        # command takes the lock itself, for its timing only
        from evokernel_harness.command_request import BenchRequest
        from evokernel_harness.commands.bench import cmd_bench
        from evokernel_harness.options import parse_request as parse

        warm = parse(["bench", "--task", "t", "--no-baseline", "--warm-compile"])
        self.assertIsInstance(warm, BenchRequest)
        self.assertFalse(warm.gpu_work)
        for wrong in (["--candidate", "c.cu"], ["--baseline", "b.cu"], ["--no-compile"], []):
            args = parse(["bench", "--task", "t", "--warm-compile", *wrong] + (["--no-baseline"] if wrong else []))
            with self.assertRaisesRegex(SystemExit, "times the reference alone"):
                cmd_bench(args)

    def test_the_server_says_when_a_request_starts(self):
        server = subprocess.Popen(
            [sys.executable, "-m", "evokernel_harness", "serve"],
            env=self.env,
            cwd=HARNESS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            self.assertTrue(json.loads(server.stdout.readline())["ready"])
            server.stdin.write(json.dumps({"id": "r1", "request": {"command": "device"}, "timeoutS": 60}) + "\n")
            server.stdin.flush()
            started = json.loads(server.stdout.readline())
            self.assertEqual(started, {"id": "r1", "started": True, "waitedS": 0.0})
            answer = json.loads(server.stdout.readline())
            self.assertEqual(answer["id"], "r1")
            self.assertEqual(answer["exit"], 0)
        finally:
            server.stdin.close()
            server.wait(timeout=300)


if __name__ == "__main__":
    unittest.main()


class LockCheckedAtStartTest(unittest.TestCase):
    """A GPU fork server whose lock file cannot be opened stops at its start, saying what to do,
    instead of failing each piece of GPU work it is given (a search's lane read every candidate
    it took as a crash)."""

    def test_a_server_that_could_never_take_its_lock_stops_at_once_and_says_why(self):
        with tempfile.TemporaryDirectory() as folder:
            os.mkdir(os.path.join(folder, "gpu-1.lock"))  # not a file: opening it fails, as root too
            env = dict(os.environ, EVOKERNEL_GPU_LOCKS=folder, PYTHONPATH=HARNESS, CUDA_VISIBLE_DEVICES="1")
            env.pop("EVOKERNEL_GPU_LOCK_HELD", None)
            proc = subprocess.run(
                [sys.executable, "-m", "evokernel_harness", "serve"],
                input="",
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(f"cannot open the GPU lock file {folder}/gpu-1.lock", proc.stderr)
        self.assertIn("EVOKERNEL_GPU_LOCKS", proc.stderr)
        self.assertNotIn('"ready"', proc.stdout)
