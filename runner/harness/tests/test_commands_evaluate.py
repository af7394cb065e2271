"""`evaluate`: the search's quick check, full verification and timing in one process. On the
CPU (no timing here) its quick and verify records are those of `verify --quick` and
`verify` with the same seed, apart from seconds and phases; it stops after the first record
that is not ok, and on the CPU writes a bench record that says timing did not run."""

import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import unittest

from evokernel_harness.options import parse_request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
PASSING = os.path.join(SMALL_SOFTMAX, "candidate_ok.py")
# right on 64x1000 only: the quick check (the smallest configuration, odd-33x257) rejects it
QUICK_FAIL = os.path.join(HERE, "candidates", "h10_aligned_shapes_only.py")
SEED = "7"
TIMING = ("seconds", "phases")


def harness(*argv):
    env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
    proc = subprocess.run(
        [sys.executable, "-m", "evokernel_harness", *argv], capture_output=True, text=True, env=env, timeout=1800
    )
    if proc.returncode != 0:
        raise AssertionError(f"harness exit {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def verify(candidate, *extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "verify.json")
        harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            SEED,
            "--task",
            SMALL_SOFTMAX,
            "--candidate",
            candidate,
            *extra,
            "--out",
            out,
        )
        with open(out) as f:
            return json.load(f)


def evaluate(candidate):
    """The records evaluate wrote (None for a file it did not write) and its log."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = {stage: os.path.join(tmp, f"{stage}.json") for stage in ("quick", "verify", "bench")}
        proc = harness(
            "evaluate",
            "--device",
            "cpu",
            "--seed",
            SEED,
            "--task",
            SMALL_SOFTMAX,
            "--candidate",
            candidate,
            "--quick-out",
            outs["quick"],
            "--verify-out",
            outs["verify"],
            "--bench-out",
            outs["bench"],
        )
        records = {}
        for stage, path in outs.items():
            if os.path.exists(path):
                with open(path) as f:
                    records[stage] = json.load(f)
            else:
                records[stage] = None
        return records, proc.stderr


RUNS = {
    "evaluate-pass": (evaluate, PASSING),
    "quick-pass": (verify, PASSING, "--quick"),
    "verify-pass": (verify, PASSING),
    "evaluate-quick-fail": (evaluate, QUICK_FAIL),
    "quick-fail": (verify, QUICK_FAIL, "--quick"),
}
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, min(5, os.cpu_count() or 2)))
_futures = {name: _pool.submit(fn, *rest) for name, (fn, *rest) in RUNS.items()}


def result(name):
    return _futures[name].result()


def without_timing(record):
    return {k: v for k, v in record.items() if k not in TIMING}


class EvaluateCpuTest(unittest.TestCase):
    def test_quick_and_verify_records_are_those_of_the_separate_commands(self):
        records, _ = result("evaluate-pass")
        self.assertTrue(records["quick"]["ok"])
        self.assertTrue(records["verify"]["ok"])
        self.assertEqual(without_timing(records["quick"]), without_timing(result("quick-pass")))
        self.assertEqual(without_timing(records["verify"]), without_timing(result("verify-pass")))
        # the quick check is the smallest configuration; the full one every visible one
        self.assertEqual([c["name"] for c in records["quick"]["configs"]], ["odd-33x257"])
        self.assertEqual([c["name"] for c in records["verify"]["configs"]], ["64x1000", "odd-33x257"])
        # each record says where its own seconds went: the task and candidate loaded once
        for stage in ("quick", "verify"):
            self.assertIn("load", records[stage]["phases"])
            self.assertIn("candidate", records[stage]["phases"])

    def test_on_the_cpu_bench_does_not_run_and_its_record_says_so(self):
        records, _ = result("evaluate-pass")
        bench = records["bench"]
        self.assertEqual(bench["kind"], "bench")
        self.assertFalse(bench["ok"])
        self.assertEqual(bench["reason"], "no-gpu")
        self.assertIn("bench did not run", bench["message"])
        self.assertEqual(bench["configs"], [])

    def test_a_quick_rejection_ends_the_run(self):
        records, log = result("evaluate-quick-fail")
        self.assertFalse(records["quick"]["ok"])
        self.assertEqual(records["quick"]["reason"], "mismatch")  # one configuration: no other to compare with
        self.assertEqual(without_timing(records["quick"]), without_timing(result("quick-fail")))
        self.assertIsNone(records["verify"])
        self.assertIsNone(records["bench"])
        self.assertIn("evaluate: quick not ok: mismatch", log)
        self.assertNotIn("evaluate: verify", log)

    def test_evaluate_holds_the_gpu_lock_unless_on_the_cpu(self):
        outs = ["--quick-out", "q", "--verify-out", "v", "--bench-out", "b"]
        self.assertTrue(parse_request(["evaluate", "--task", "t", "--candidate", "c", *outs]).gpu_work)
        self.assertFalse(
            parse_request(["evaluate", "--device", "cpu", "--task", "t", "--candidate", "c", *outs]).gpu_work
        )


if __name__ == "__main__":
    unittest.main()
