"""The search's screen takes the samples the spread needs and races candidates (issue 20), on
the CPU against the head-start tests' model of a GPU stream: a steady pair stops after the
minimum rounds, a noisy one goes on to the budget's count, a candidate slower than the leader
beyond the noise stops sooner; over configurations, one whose most favourable speedup so far
is under the leader's least favourable one is raced out, one inside the noise is not. Bench's
own timing (no stop) keeps the budget's count."""

import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))
sys.path.insert(0, HERE)

from evokernel_harness import bench, timing  # noqa: E402 — importable once the path above is set
import test_timing_head_start as head  # noqa: E402 — likewise (this folder)


def stat(median, p20, p80):
    return {"medianMs": median, "p20Ms": p20, "p80Ms": p80, "minMs": p20, "meanMs": median, "n": 10}


class ScreenSamples(unittest.TestCase):
    setUp = head.HeadStartTest.setUp  # the modelled stream and the patches that time it

    def screen(self, gpu_ms, leader_lower=None, noise=0.0, stop=True):
        rng = random.Random(5)
        impls = {
            name: (lambda _, ms=ms: self.stream.launch(0.02, ms * (1 + noise * rng.uniform(-1, 1))))
            for name, ms in gpu_ms.items()
        }
        timer = head.fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        raw = timer.interleaved(
            impls, [None], budget_s=0.5, seed=3, stop=bench.screen_stop(leader_lower) if stop else None
        )
        return {name: len(r["event"]) for name, r in raw.items()}, raw

    def test_a_steady_pair_stops_after_the_minimum_rounds(self):
        counts, _ = self.screen({"baseline": 0.30, "candidate": 0.20})
        self.assertEqual(counts, {"baseline": bench.SCREEN_MIN_ROUNDS, "candidate": bench.SCREEN_MIN_ROUNDS})

    def test_without_a_stop_the_budget_decides_as_before(self):
        counts, _ = self.screen({"baseline": 0.30, "candidate": 0.20}, stop=False)
        self.assertGreater(counts["candidate"], bench.SCREEN_MIN_ROUNDS)
        self.assertLessEqual(counts["candidate"], 200)

    def test_a_noisy_pair_takes_the_budgets_samples(self):
        counts, _ = self.screen({"baseline": 0.30, "candidate": 0.20}, noise=0.2)
        _, unstopped = self.screen({"baseline": 0.30, "candidate": 0.20}, noise=0.2, stop=False)
        self.assertEqual(counts["candidate"], len(unstopped["candidate"]["event"]))

    def test_a_candidate_slower_than_the_leader_stops_sooner(self):
        counts, raw = self.screen({"baseline": 0.30, "candidate": 0.40}, leader_lower=0.98)
        self.assertEqual(counts["candidate"], bench.RACE_MIN_ROUNDS)
        cand, base = (timing.stats(raw[n]["event"]) for n in ("candidate", "baseline"))
        self.assertLess(base["p80Ms"] / cand["p20Ms"], 0.98)

    def test_a_candidate_faster_than_the_leader_is_timed_to_the_spreads_minimum(self):
        counts, _ = self.screen({"baseline": 0.30, "candidate": 0.20}, leader_lower=1.2)
        self.assertEqual(counts["candidate"], bench.SCREEN_MIN_ROUNDS)


class RaceOverConfigurations(unittest.TestCase):
    def row(self, name, base, cand, launch_bound=False):
        return {"name": name, "launchBound": launch_bound, "baseline": base, "candidate": cand}

    def test_slower_beyond_the_noise_after_the_first_configuration(self):
        rows = [self.row("a", stat(0.30, 0.295, 0.305), stat(0.40, 0.39, 0.41))]
        raced = bench._race({"a": 1.1, "b": 1.0}, rows)
        self.assertEqual(raced["config"], "a")
        self.assertEqual(raced["timed"], ["a"])
        self.assertAlmostEqual(raced["speedupUpper"], 0.305 / 0.39)
        self.assertAlmostEqual(raced["leaderLower"], 1.1)
        self.assertIn("under the leader's 1.100x", raced["message"])

    def test_inside_the_noise_is_not_raced(self):
        # the candidate's median is below the leader's, but its p20 reaches it
        rows = [self.row("a", stat(0.30, 0.29, 0.31), stat(0.30, 0.28, 0.32))]
        self.assertIsNone(bench._race({"a": 1.1}, rows))

    def test_the_geometric_mean_of_the_configurations_timed_so_far_decides(self):
        rows = [
            self.row("a", stat(0.30, 0.30, 0.30), stat(0.20, 0.20, 0.20)),  # 1.5x
            self.row("b", stat(0.30, 0.30, 0.30), stat(0.60, 0.60, 0.60)),
        ]  # 0.5x
        # geomean 0.866 against a leader at 1.0 on both: raced after b, not after a alone
        self.assertIsNone(bench._race({"a": 1.0, "b": 1.0}, rows[:1]))
        raced = bench._race({"a": 1.0, "b": 1.0}, rows)
        self.assertEqual(raced["config"], "b")

    def test_launch_bound_and_unknown_configurations_do_not_count(self):
        rows = [
            self.row("a", stat(0.01, 0.01, 0.01), stat(0.02, 0.02, 0.02), launch_bound=True),
            self.row("new", stat(0.30, 0.30, 0.30), stat(0.60, 0.60, 0.60)),
        ]
        self.assertIsNone(bench._race({"a": 1.0}, rows))


if __name__ == "__main__":
    unittest.main()
