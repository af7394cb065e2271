"""Every harness command under a memory limit of its own (issue 34.3, limits.py): `verify` of a
task whose inputs need more memory than EVOKERNEL_MEM_LIMIT_MB fails at the allocation, exit 3,
with a MemoryLimitError line naming the limit and the allocation, instead of growing until the
kernel's OOM killer picks a process of the machine. Without the limit the same run allocates
4 GiB (and, on a machine without it, is killed by the OOM killer)."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))
REPO = os.path.normpath(os.path.join(HARNESS, "..", ".."))
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")


def verify(task, candidate, limit_mb):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off", "EVOKERNEL_MEM_LIMIT_MB": limit_mb}
        return subprocess.run(
            [sys.executable, "-m", "evokernel_harness", "verify", "--device", "cpu", "--seed", "7"]
            + ["--task", task, "--candidate", candidate, "--cache", os.path.join(tmp, "cache"), "--out", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )


class MemoryLimitTest(unittest.TestCase):
    def test_inputs_over_the_limit_are_exit_3_naming_the_limit_and_the_allocation(self):
        # 4 GiB of inputs under a 512 MiB limit: refused at the allocation, in seconds
        proc = verify(os.path.join(HERE, "tasks", "huge_relu.py"), os.path.join(HERE, "tasks", "relu_new.py"), "512")
        self.assertEqual(proc.returncode, 3, proc.stderr[-3000:])
        self.assertIn("MemoryLimitError: ", proc.stderr)
        self.assertIn("the memory limit of 512 MiB (EVOKERNEL_MEM_LIMIT_MB", proc.stderr)
        self.assertIn("an allocation of 4294967296 bytes (4.0 GiB)", proc.stderr)

    def test_a_task_within_the_limit_verifies_as_before(self):
        proc = verify(SMALL_SOFTMAX, os.path.join(SMALL_SOFTMAX, "candidate_ok.py"), "512")
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])

    def test_the_limit_is_half_the_machine_unless_set(self):
        from evokernel_harness import limits

        saved = os.environ.pop(limits.MEM_ENV, None)
        try:
            total = limits.machine_mb()
            self.assertEqual(limits.memory_limit_mb(), max(256, total // 2) if total else limits.DEFAULT_FALLBACK_MB)
            os.environ[limits.MEM_ENV] = "700"
            self.assertEqual(limits.memory_limit_mb(), 700)
        finally:
            os.environ.pop(limits.MEM_ENV, None)
            if saved is not None:
                os.environ[limits.MEM_ENV] = saved


if __name__ == "__main__":
    unittest.main()
