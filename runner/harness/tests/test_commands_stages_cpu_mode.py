"""Issue 33.8: CPU mode never gives a GPU verdict. `verify --device cpu` on a CUDA candidate
(a .cu file) checks what the CPU can (the static check, the build) and says there is no
verdict (reason no-gpu, status error: the CLI's exit 3), never a launch-error hack verdict; a
CPU pass says it is a CPU check only, not a verdict."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SOFTMAX = os.path.join(REPO, "kernels", "softmax")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")


def verify(task, candidate):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        proc = subprocess.run(
            [sys.executable, "-m", "evokernel_harness", "verify", "--device", "cpu", "--seed", "7"]
            + ["--task", task, "--candidate", candidate, "--cache", os.path.join(tmp, "cache"), "--out", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise AssertionError(f"harness exit {proc.returncode}:\n{proc.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


class CpuModeTest(unittest.TestCase):
    def test_a_cuda_candidate_gets_no_verdict_on_the_cpu(self):
        rec = verify(SOFTMAX, os.path.join(SOFTMAX, "kernel.cu"))
        self.assertFalse(rec["ok"])
        self.assertEqual((rec["status"], rec["reason"], rec["hack"]), ("error", "no-gpu", None), rec["message"])
        self.assertIn("runs only on a CUDA GPU", rec["message"])
        self.assertIn("the static check (passed", rec["message"])
        self.assertNotIn("launch-error", json.dumps(rec))

    def test_a_cpu_pass_says_it_is_no_verdict(self):
        rec = verify(SMALL_SOFTMAX, os.path.join(SMALL_SOFTMAX, "candidate_ok.py"))
        self.assertTrue(rec["ok"], rec["message"])
        self.assertTrue(any(w.startswith("CPU check only, not a verdict") for w in rec["warnings"]), rec["warnings"])


if __name__ == "__main__":
    unittest.main()
