"""The sandbox's file-size and process-count limits (issue 34.3; runner/sandbox/enter.sh applies
them with prlimit, runner/src/sandbox/sandbox.ts sizes them from the machine): a harness command
that hits one fails exit 3 with a line naming the limit in force and its setting
(FileSizeLimitError, ProcessLimitError: limits.py), not a traceback or a death by SIGXFSZ.
Here the limit is set as prlimit would, on the harness's process."""

import errno
import os
import resource
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))
RELU = os.path.join(HERE, "tasks", "relu_new.py")


def verify_under_fsize(task, fsize):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        return subprocess.run(
            [sys.executable, "-m", "evokernel_harness", "verify", "--device", "cpu", "--seed", "7"]
            + ["--task", task, "--candidate", RELU, "--cache", os.path.join(tmp, "cache")]
            + ["--out", os.path.join(tmp, "record.json")],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
            preexec_fn=limit,
        )


class FileSizeLimitTest(unittest.TestCase):
    def test_a_write_past_the_limit_is_exit_3_naming_the_limit(self):
        proc = verify_under_fsize(os.path.join(HERE, "tasks", "big_file_relu.py"), 1 << 20)
        self.assertEqual(proc.returncode, 3, proc.stderr[-3000:])
        self.assertIn(
            "FileSizeLimitError: a write went past the file-size limit of 1048576 bytes (1 MiB) "
            "(EVOKERNEL_SANDBOX_FSIZE",
            proc.stderr,
        )
        self.assertNotIn("Traceback", proc.stderr)

    def test_a_task_within_the_limit_verifies_as_before(self):
        proc = verify_under_fsize(os.path.join(HERE, "tasks", "big_file_relu.py"), 64 << 20)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])


class ProcessLimitTest(unittest.TestCase):
    def test_a_refused_fork_or_thread_names_the_process_count_limit(self):
        from evokernel_harness import limits

        refused = BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        for err in (refused, RuntimeError("can't start new thread")):
            said = limits.over_resource_limit("the harness's verify", err)
            self.assertIsNotNone(said)
            assert said is not None
            self.assertTrue(said.startswith("ProcessLimitError: "), said)
            self.assertIn("the process-count limit of", said)
            self.assertIn("(EVOKERNEL_SANDBOX_NPROC", said)
        self.assertIsNone(limits.over_resource_limit("x", ValueError("other")))
        self.assertIsNone(limits.over_resource_limit("x", OSError(errno.ENOENT, "missing")))


if __name__ == "__main__":
    unittest.main()
