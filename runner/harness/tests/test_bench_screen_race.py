"""The search's screen takes the samples the spread needs and races candidates (issue 20), on
the CPU against the head-start tests' model of a GPU stream: a steady pair stops after the
minimum rounds, a noisy one goes on to the budget's count, a candidate slower than the leader
beyond the noise stops sooner; over configurations, one that can no longer reach the leader
(its most favourable speedup on what was timed, the floor's on the rest) is raced out, one
that still could is not. Bench's own timing (no stop) keeps the budget's count."""

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
    """A candidate stops only when it can no longer win: its most favourable speedup on what was
    timed, and the most any kernel could gain on the rest (the kernel to beat's time over the
    floor, over BELOW_FLOOR), under the leader's least favourable over every configuration."""

    def row(self, name, base, cand, launch_bound=False):
        return {"name": name, "launchBound": launch_bound, "baseline": base, "candidate": cand}

    def test_stops_one_that_cannot_win_even_at_the_floor_on_the_rest(self):
        rows = [self.row("a", stat(0.30, 0.295, 0.305), stat(0.90, 0.89, 0.91))]
        # b: the kernel to beat runs at 1.02x the floor, so no kernel gains over 1.2x there
        raced = bench._race({"a": 1.1, "b": 1.0}, {"a": 1.5, "b": 1.02}, rows)
        self.assertEqual(raced["config"], "a")
        self.assertEqual(raced["timed"], ["a"])
        upper = ((0.305 / 0.89) * (1.02 / bench.BELOW_FLOOR)) ** 0.5
        self.assertAlmostEqual(raced["speedupUpper"], upper)
        self.assertAlmostEqual(raced["leaderLower"], (1.1 * 1.0) ** 0.5)
        self.assertIn("at the floor's on b", raced["message"])
        self.assertIn("it cannot win", raced["message"])

    def test_one_that_loses_the_first_configuration_but_could_win_the_rest_goes_on(self):
        # 0.75x on a; but b's kernel to beat is 3x the floor: the rest could still give it the lead
        rows = [self.row("a", stat(0.30, 0.295, 0.305), stat(0.40, 0.39, 0.41))]
        self.assertIsNone(bench._race({"a": 1.1, "b": 1.0}, {"a": 1.5, "b": 3.0}, rows))

    def test_a_configuration_with_no_ceiling_keeps_every_candidate_timed(self):
        rows = [self.row("a", stat(0.30, 0.295, 0.305), stat(3.0, 2.9, 3.1))]  # 0.1x
        self.assertIsNone(bench._race({"a": 1.1, "b": 1.0}, {"a": 1.5}, rows))
        self.assertIsNone(bench._race({"a": 1.1, "b": 1.0}, {}, rows))
        self.assertIsNotNone(bench._race({"a": 1.1, "b": 1.0}, {"b": 1.1}, rows))

    def test_inside_the_noise_is_not_raced(self):
        # every configuration timed: the candidate's median is below the leader's, its p20 reaches it
        rows = [self.row("a", stat(0.30, 0.29, 0.31), stat(0.30, 0.28, 0.32))]
        self.assertIsNone(bench._race({"a": 1.1}, {}, rows))

    def test_the_geometric_mean_over_every_configuration_decides(self):
        rows = [
            self.row("a", stat(0.30, 0.30, 0.30), stat(0.20, 0.20, 0.20)),  # 1.5x
            self.row("b", stat(0.30, 0.30, 0.30), stat(0.60, 0.60, 0.60)),  # 0.5x
        ]
        # after a alone b could still give 1.02 / 0.85: not raced; after b, 0.866 under 1.0
        self.assertIsNone(bench._race({"a": 1.0, "b": 1.0}, {"a": 1.02, "b": 1.02}, rows[:1]))
        raced = bench._race({"a": 1.0, "b": 1.0}, {"a": 1.02, "b": 1.02}, rows)
        self.assertEqual(raced["config"], "b")
        self.assertNotIn("at the floor's", raced["message"])

    def test_a_launch_bound_configuration_counts_at_its_ceiling_and_unknown_ones_not_at_all(self):
        rows = [
            self.row("a", stat(0.01, 0.01, 0.01), stat(0.02, 0.02, 0.02), launch_bound=True),
            self.row("new", stat(0.30, 0.30, 0.30), stat(0.60, 0.60, 0.60)),
        ]
        # nothing the leader was timed on has been timed here: no verdict
        self.assertIsNone(bench._race({"a": 1.0}, {"a": 1.0}, rows))
        rows.append(self.row("b", stat(0.30, 0.30, 0.30), stat(0.60, 0.60, 0.60)))  # 0.5x
        # a, launch-bound in this run, counts at the most it could give (1.0 / 0.85)
        raced = bench._race({"a": 1.0, "b": 1.0}, {"a": 1.0}, rows)
        self.assertAlmostEqual(raced["speedupUpper"], (0.5 / bench.BELOW_FLOOR) ** 0.5)


if __name__ == "__main__":
    unittest.main()
