"""The machine-wide GPU lock (evokernel_harness/gpulock.py): GPU commands of two processes
never overlap; CPU commands and children of a server that holds the lock do not take it."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock

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


HOLD_UNTIL = """
import os, sys, time
from evokernel_harness import gpulock
name, share, log = sys.argv[1], sys.argv[2] == "share", sys.argv[3]
def say(what):
    with open(log, "a") as f:
        f.write(f"{what} {name}\\n")
with gpulock.hold(True, on_wait=lambda: say("wait"), share=share) as held:
    say("in-shared" if held.shared else "in-alone")
    release = os.path.join(os.path.dirname(log), "release-" + name)
    deadline = time.time() + 300
    while not os.path.exists(release) and time.time() < deadline:
        time.sleep(0.01)
    say("out")
"""


class GpuShareTest(unittest.TestCase):
    """Verifications share a GPU, up to EVOKERNEL_GPU_SHARE at once; a timing waits for them
    alone, and verifications that come after a waiting timing wait behind it. Each holder says
    what it did in a log; the test releases each by a file, so nothing rests on timing."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.dir.name, "log")
        self.env = dict(os.environ, EVOKERNEL_GPU_LOCKS=os.path.join(self.dir.name, "locks"), PYTHONPATH=HARNESS)
        self.env.pop("EVOKERNEL_GPU_LOCK_HELD", None)
        self.procs = []

    def tearDown(self):
        for name in "abcde":
            open(os.path.join(self.dir.name, "release-" + name), "w").close()
        for proc in self.procs:
            proc.wait(timeout=300)
        self.dir.cleanup()

    def start(self, name, mode, **env):
        self.procs.append(
            subprocess.Popen([sys.executable, "-c", HOLD_UNTIL, name, mode, self.log], env=dict(self.env, **env))
        )

    def lines(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().split("\n")

    def until(self, line, *instead):
        """Waits for line; fails at once if one of instead comes first."""
        deadline = time.time() + 300
        while line not in self.lines():
            wrong = [other for other in instead if other in self.lines()]
            self.assertEqual(wrong, [], f"saw {wrong} before {line!r}: {self.lines()}")
            self.assertLess(time.time(), deadline, f"never saw {line!r}: {self.lines()}")
            time.sleep(0.01)

    def release(self, name):
        open(os.path.join(self.dir.name, "release-" + name), "w").close()
        self.until(f"out {name}")

    def test_verifications_share_a_gpu_up_to_the_limit(self):
        self.start("a", "share")
        self.start("b", "share")
        self.until("in-shared a")
        self.until("in-shared b", "wait b")  # both at once
        self.start("c", "share")
        self.until("wait c", "in-shared c")  # a third waits for a slot
        self.assertNotIn("in-shared c", self.lines())
        self.release("a")
        self.until("in-shared c")
        self.release("b")
        self.release("c")

    def test_a_timing_waits_for_the_verifications_alone_and_those_after_it_wait_behind_it(self):
        self.start("a", "share")
        self.until("in-shared a")
        self.start("e", "alone")
        self.until("wait e")
        self.start("b", "share")
        self.until("wait b", "in-shared b")  # a slot is free, but the timing waiting holds the gate
        self.release("a")
        self.until("in-alone e")
        self.assertNotIn("in-shared b", self.lines())
        self.release("e")
        self.until("in-shared b")
        self.release("b")

    def test_one_never_shares(self):
        self.start("a", "share", EVOKERNEL_GPU_SHARE="1")
        self.until("in-alone a")
        self.start("b", "share", EVOKERNEL_GPU_SHARE="1")
        self.until("wait b", "in-alone b", "in-shared b")
        self.release("a")
        self.until("in-alone b")
        self.release("b")

    def test_a_share_limit_that_is_not_one_is_refused_saying_what_it_takes(self):
        from evokernel_harness import gpulock

        for raw, why in (("two", "not a whole number"), ("0", "out of range"), ("99", "out of range")):
            with self.subTest(raw=raw), unittest.mock.patch.dict(os.environ, {"EVOKERNEL_GPU_SHARE": raw}):
                with self.assertRaisesRegex(ValueError, why):
                    gpulock.share_limit()

    def test_without_its_gate_a_verification_takes_the_gpu_alone(self):
        # a folder of root's prepared before the gate existed: nobody can make the gate there
        locks = self.env["EVOKERNEL_GPU_LOCKS"]
        os.makedirs(locks)
        os.mkdir(os.path.join(locks, "gpu-0.gate"))  # not a file: it cannot be opened
        self.start("a", "share")
        self.until("in-alone a")
        self.start("b", "share")
        self.until("wait b", "in-alone b", "in-shared b")
        self.release("a")
        self.until("in-alone b")
        self.release("b")


class LockFilesNamedAlikeTest(unittest.TestCase):
    def test_the_files_beside_a_lock_are_those_a_folder_of_roots_holds(self):
        """src/process/gpu-locks.ts makes them for a folder of root's, where a sandbox cannot."""
        from evokernel_harness import gpulock

        ts = open(os.path.join(HARNESS, "..", "..", "src", "process", "gpu-locks.ts")).read()
        self.assertIn(f"export const MAX_GPU_SHARE = {gpulock.MAX_SHARE};", ts)
        self.assertIn("`${stem}.gate`", ts)
        self.assertIn("`${stem}.share-${k}`", ts)
        gate, slots = gpulock.side_files("/l/gpu-3.lock", 2)
        self.assertEqual((gate, slots), ("/l/gpu-3.gate", ["/l/gpu-3.share-0", "/l/gpu-3.share-1"]))


class ShareRetryTest(unittest.TestCase):
    """A verification that does not pass while it shares the GPU runs again alone, and that
    run's answer is the request's (server.py): a neighbour never decides a verdict."""

    def run_with(self, first_ok: bool, first_exit: int = 0):
        import contextlib
        import io

        from evokernel_harness import gpulock, server
        from evokernel_harness.server import Request

        from evokernel_harness.command_request import parse_command

        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(folder, ignore_errors=True))
        out_path = self.out_path = os.path.join(folder, "v.json")
        command = parse_command({"command": "verify", "task": "t", "candidate": "c.cu", "out": out_path})
        self.assertTrue(command.gpu_share)
        runs = []

        def child(req):
            alone = len(runs) == 1
            runs.append(req.id)
            ok = first_ok or alone
            with open(out_path, "w") as f:
                json.dump({"ok": ok, "warnings": []}, f)
            code = first_exit if not alone else 0
            return {
                "id": req.id,
                "exit": code,
                "signal": None,
                "seconds": 0.1,
                "timedOut": False,
                "memKilled": False,
                "log": f"run {len(runs)} ok={ok}",
            }

        shares = []

        @contextlib.contextmanager
        def hold(gpu_work, on_wait=None, share=False):
            shares.append(share)
            yield gpulock.Hold(0.0, share)

        said = io.StringIO()
        with (
            unittest.mock.patch.object(server, "_run_child", child),
            unittest.mock.patch.object(server.gpulock, "hold", hold),
            unittest.mock.patch.object(server, "_reap_strays", lambda: None),
        ):
            answer = server._run(Request("r1", command, 60.0), said)
        return answer, shares, said.getvalue()

    def test_a_pass_while_sharing_is_kept(self):
        answer, shares, said = self.run_with(first_ok=True)
        self.assertEqual(shares, [True])
        self.assertEqual(answer["log"], "run 1 ok=True")

    def test_a_failure_while_sharing_is_verified_again_alone(self):
        for first_exit in (0, 4):
            with self.subTest(first_exit=first_exit):
                answer, shares, said = self.run_with(first_ok=False, first_exit=first_exit)
                self.assertEqual(shares, [True, False])
                self.assertIn("verified again alone", answer["log"])
                self.assertIn("run 2 ok=True", answer["log"])
                # the client hears the second start, so the request's deadline starts again
                self.assertEqual(said.count('"started": true'), 2)
                # and the record says so
                with open(self.out_path) as f:
                    self.assertIn("verified again alone", " ".join(json.load(f)["warnings"]))


if __name__ == "__main__":
    unittest.main()
