"""`inspect --probe` under its memory limit (issue 34.3): a task whose inputs need more memory
than the probe may take fails at once, naming the limit and the allocation, instead of growing
until the kernel's OOM killer picks a process of the machine (KernelBench's 19_ReLU.py took a
23 GB machine down so)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))


def inspect(task, env_extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        env = {**os.environ, "PYTHONPATH": HARNESS, **env_extra}
        proc = subprocess.run(
            [sys.executable, "-m", "evokernel_harness", "inspect", "--probe", "--task", task, "--out", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise AssertionError(f"harness exit {proc.returncode}:\n{proc.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


class ProbeMemoryTest(unittest.TestCase):
    def test_inputs_over_the_limit_fail_naming_it(self):
        # 4 GiB of inputs under a 256 MiB limit: refused at the allocation, in seconds
        rec = inspect(os.path.join(HERE, "tasks", "huge_relu.py"), {"EVOKERNEL_PROBE_MEM_MB": "256"})
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["probe"]["reason"], "resources")
        self.assertIn("limit of 256 MiB (EVOKERNEL_PROBE_MEM_MB", rec["error"])
        self.assertIn("4294967296 bytes", rec["error"])

    def test_a_task_within_the_limit_probes_as_before(self):
        rec = inspect(os.path.join(HERE, "tasks", "small_batchnorm.py"), {"EVOKERNEL_PROBE_MEM_MB": "256"})
        self.assertTrue(rec["ok"], rec)
        self.assertTrue(rec["probe"]["ok"], rec)


if __name__ == "__main__":
    unittest.main()
