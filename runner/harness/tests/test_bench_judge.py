"""Bench's timings judged where the candidate never ran (issue 16.1, bench_judge.py), on the CPU
with the GPU modelled as in test_bench: the candidate's process (forked by the judge, as the
command forks it) times the baseline kernel and the candidate; the judge times eager itself,
computes the floor, bounds the claimed times by the wall it saw the timing take and compares the
outputs after timing. Candidates that take over their own process to forge a time under the
floor, to forge slower baselines, or to hide outputs that are wrong after timing are refused
with the true reason; an honest one is timed as in one process. The hostile candidates live in
test/security/fixtures/bench/.

Run:  cd runner/harness && /usr/bin/python3 -m unittest tests.test_bench_judge -v
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

from evokernel_harness import bench, bench_judge
from evokernel_harness.probe_cache import CostMeasured, ProbeCache, probe_key, task_digest
from evokernel_harness.tasks import load_task
from tests import test_bench as cpu

HOSTILE = os.path.join(cpu.REPO, "test", "security", "fixtures", "bench")
SEED = 1234
INFO = {"name": "cpu", "l2Bytes": None}
# A floor of 0.05 ms on 64x1000 (512000 bytes at 10.24 GB/s), under the modelled 0.2 ms a call
FLOOR = {"bandwidthGBs": 10.24, "fp32Tflops": 1e30, "bf16Tflops": 1e30, "measuredAt": "-", "device": "cpu"}


def in_own_process(fn):
    """fn()'s JSON result, run in a forked process: the judge makes the process it runs in a
    subreaper that stops what its candidate left, which must not be the test runner's."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with open(out, "w") as f:
                    json.dump(fn(), f)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WEXITSTATUS(status) != 0:
            raise AssertionError(f"the judge's process ended with status {status}")
        with open(out) as f:
            return json.load(f)


class BenchJudgeTest(cpu.CpuModel):
    def judged(self, path=cpu.HONEST, ceilings=FLOOR, probes=None):
        """The judged bench of the candidate at `path` beside the honest baseline kernel."""

        def candidate_side(side):  # in the candidate's process: the only one that loads it
            cand, base = self.candidate(path, 0.2), self.candidate(cpu.HONEST, 0.3)
            timed = bench.bench(
                self.task,
                cand,
                base,
                None,
                INFO,
                SEED,
                log=lambda _: None,
                budget_s=0.025,
                compile_baseline=False,
                time_eager=False,
                judged=side,
            )
            return {"schema": 1, "kind": "bench", **timed}  # as bench_run gives it

        def judge_side():
            own = bench.bench(
                self.task,
                None,
                None,
                ceilings,
                INFO,
                SEED,
                log=lambda _: None,
                budget_s=0.025,
                compile_baseline=False,
                probe_cache=probes,
            )
            judging = bench_judge.Judging(self.task, torch.device("cpu"), SEED, cpu.HONEST, path)
            return {**own, "task": self.task.name, "device": INFO, "ceilings": ceilings}, judging

        return in_own_process(lambda: bench_judge.bench_judged("small_softmax", candidate_side, judge_side))

    def test_an_honest_candidate_is_timed_with_eager_and_the_floor_from_the_judge(self):
        rec = self.judged()
        self.assertEqual((rec["ok"], rec["reason"], rec["message"]), (True, None, "timed"))
        self.assertEqual([r["name"] for r in rec["configs"]], self.config_names)
        first = rec["configs"][0]
        self.assertAlmostEqual(first["candidate"]["medianMs"], 0.2, places=6)
        self.assertAlmostEqual(first["baseline"]["medianMs"], 0.3, places=6)
        self.assertIsNotNone(first["eager"])  # timed by the judge: the candidate's process did not
        self.assertAlmostEqual(first["floorMs"], 0.05, places=6)
        self.assertEqual([r["launchBound"] for r in rec["configs"]], [False, True])
        self.assertEqual(rec["profile"]["config"], "64x1000")
        self.assertEqual(sum("odd-33x257: launch-bound" in n for n in rec["notes"]), 1)
        self.assertIn("judge", rec["phases"])
        # the judge's own bench's seconds too (its timing of eager, its compile when asked)
        self.assertIn("judge timing", rec["phases"])

    def test_a_time_forged_under_the_floor_is_refused_by_the_judge(self):
        rec = self.judged(os.path.join(HOSTILE, "forged_fast.py"))
        self.assertEqual(rec["reason"], "below-floor", rec["message"])
        self.assertEqual(rec["configs"][0]["reason"], "below-floor")
        self.assertIn("(configuration 64x1000)", rec["message"])

    def test_a_cost_written_into_the_probe_cache_does_not_move_the_floor(self):
        folder = os.path.join(self.cache, "probe")
        digest = task_digest(self.task)
        for config in self.task.visible_configs():  # what a takeover of the candidate's process could write
            ProbeCache(folder).put_cost(probe_key(digest, self.task, config, INFO), 1, 0)
        rec = self.judged(os.path.join(HOSTILE, "forged_fast.py"), probes=CostMeasured(folder))
        self.assertEqual(rec["reason"], "below-floor", rec["message"])
        self.assertEqual(rec["configs"][0]["bytes"], 512000)

    def test_slower_baselines_forged_in_the_candidates_process_are_refused(self):
        rec = self.judged(os.path.join(HOSTILE, "forged_slow_baselines.py"))
        self.assertEqual(rec["reason"], "verdict-forged", rec["message"])
        self.assertIn("configuration 64x1000: the candidate's process claims", rec["message"])
        # eager is the judge's own timing, not the minute a call the candidate's process wrote
        self.assertLess(rec["configs"][0]["eager"]["medianMs"], 1000)

    def test_outputs_wrong_after_timing_are_refused_though_its_process_says_right(self):
        rec = self.judged(os.path.join(HOSTILE, "wrong_after_timing.py"))
        self.assertEqual(rec["reason"], "timing-output-mismatch", rec["message"])
        self.assertIn("never loaded the candidate", rec["message"])

    def test_the_candidate_that_is_wrong_after_timing_passes_verify(self):
        """The premise of the test above: verify never times it, so it is right there."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "verify.json")
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "evokernel_harness",
                    "verify",
                    "--device",
                    "cpu",
                    "--seed",
                    "7",
                    "--task",
                    cpu.TASK,
                    "--candidate",
                    os.path.join(HOSTILE, "wrong_after_timing.py"),
                    "--out",
                    out,
                ],
                capture_output=True,
                text=True,
                timeout=600,
                env={
                    **os.environ,
                    "PYTHONPATH": os.path.join(cpu.REPO, "runner", "harness"),
                    "EVOKERNEL_GPU_LOCKS": "off",
                },
            )
            self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            with open(out) as f:
                self.assertTrue(json.load(f)["ok"])


class ClaimedFailureTest(unittest.TestCase):
    def test_a_failure_the_claim_reports_stands_whatever_its_rows_say(self):
        task = load_task(cpu.TASK)
        judging = bench_judge.Judging(task, torch.device("cpu"), SEED, None, None)
        own = {"configs": [], "notes": [], "device": INFO, "ceilings": FLOOR, "probeCache": None}
        for said, reason in (("side-stream", "side-stream"), ("no such reason", "record-invalid")):
            claim = {"kind": "bench", "ok": False, "reason": said, "message": "its words", "configs": []}
            rec = bench_judge.decide(claim, own, judging, {}, tempfile.mkdtemp())
            self.assertEqual((rec["ok"], rec["reason"], rec["message"]), (False, reason, "its words"))


class MarksTest(unittest.TestCase):
    def test_windows_are_read_from_start_and_end_marks_in_order(self):
        marks = [(1.0, b"start 0"), (1.5, b"end 0"), (2.0, b"start 1"), (2.25, b"end 1")]
        self.assertEqual(bench_judge.windows(marks), {0: 0.5, 1: 0.25})

    def test_marks_out_of_order_give_no_window_at_all(self):
        for marks in (
            [(1.0, b"start 0"), (2.0, b"start 1"), (3.0, b"end 0"), (4.0, b"end 1")],  # overlapping
            [(1.0, b"start 1"), (2.0, b"end 1"), (3.0, b"start 0"), (4.0, b"end 0")],  # a window twice over
            [(1.0, b"start 0")],  # never ended
            [(1.0, b"start 0"), (2.0, b"end 0 "), (3.0, b"end 0")],  # not a mark
        ):
            self.assertIsNone(bench_judge.windows(marks), marks)


class ClaimedTimesTest(unittest.TestCase):
    def stat(self, **kw):
        return {"medianMs": 1.0, "p20Ms": 0.9, "p80Ms": 1.1, "minMs": 0.8, "meanMs": 1.0, "n": 20, **kw}

    def test_the_least_time_claimed_statistics_hold(self):
        self.assertAlmostEqual(bench_judge.implied_ms(self.stat()), 20.0)
        # a mean too small for its median: the median's half of the samples still took that long
        self.assertAlmostEqual(bench_judge.implied_ms(self.stat(meanMs=0.8)), 10 * 1.0 + 10 * 0.8)

    def test_statistics_that_cannot_come_from_the_timer_are_named(self):
        self.assertIsNone(bench_judge.stat_problem(self.stat()))
        self.assertIn("samples", bench_judge.stat_problem(self.stat(n=1)))
        self.assertIn("not in order", bench_judge.stat_problem(self.stat(minMs=2.0)))
        self.assertIn("not timing statistics", bench_judge.stat_problem(self.stat(medianMs=float("nan"))))


if __name__ == "__main__":
    unittest.main()
