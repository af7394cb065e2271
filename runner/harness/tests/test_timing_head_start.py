"""The timer's head start on the CPU, against a model of a GPU stream: a short head start
(the search's screen) gives the same events as the full one when it covers the call's host
side, it is fitted to the host side the budget's estimate measured, and a call whose host side
outlasts it anyway is timed again with the full one (the short run cut short); the number of
samples never depends on the head start. (On the GPU machine the timer itself runs in every
bench; this checks the decision it makes, which the GPU cannot show apart.)"""

import os
import sys
import unittest
from unittest import mock

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))

from evokernel_harness import guards, timing  # noqa: E402 — importable once the path above is set

CLOCK_MHZ = 1755  # below the bound timing.py assumes: a sleep lasts longer than it reckons


class Stream:
    """One stream of a GPU, in ms: the host's clock and when the GPU is free again."""

    def __init__(self, clock_mhz=CLOCK_MHZ):
        self.host = 0.0
        self.gpu = 0.0
        self.clock_mhz = clock_mhz

    def perf_counter(self):
        return self.host / 1e3

    def sleep(self, cycles):
        self.gpu = max(self.gpu, self.host) + cycles / (self.clock_mhz * 1e3)
        self.host += 0.005  # a launch

    def record(self, event, _stream=None):
        self.gpu = max(self.gpu, self.host)
        event.at = self.gpu
        self.host += 0.002

    def launch(self, host_ms, gpu_ms):
        """A call whose host side takes host_ms before its work (gpu_ms) is enqueued."""
        self.host += host_ms
        self.gpu = max(self.gpu, self.host) + gpu_ms

    def synchronize(self):
        self.host = max(self.host, self.gpu) + 0.01


class FakeEvent:
    def __init__(self, enable_timing=True):
        self.at = None


def fake_timer(stream, head_start):
    """A real Timer on the CPU (its flush buffer is never written), timing the modelled stream."""
    timer = timing.Timer("cpu", None, head_start)
    timer.flush = lambda i: None
    return timer


class HeadStartTest(unittest.TestCase):
    def setUp(self):
        self.stream = Stream()
        event_base = mock.Mock()
        event_base.record = self.stream.record
        event_base.elapsed_time = lambda a, b: b.at - a.at
        patches = [
            mock.patch.object(timing, "Event", FakeEvent),
            mock.patch.object(timing, "sleep", self.stream.sleep),
            mock.patch.object(guards, "EventBase", event_base),
            mock.patch.object(guards, "synchronize", self.stream.synchronize),
            mock.patch.object(guards, "perf_counter", self.stream.perf_counter),
            mock.patch.object(torch.cuda, "current_stream", lambda: None),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def impls(self, host_ms):
        return {
            "baseline": lambda _: self.stream.launch(host_ms, 0.30),
            "candidate": lambda _: self.stream.launch(host_ms, 0.20),
        }

    def time(self, head_start, host_ms):
        timer = fake_timer(self.stream, head_start)
        raw = timer.interleaved(self.impls(host_ms), [None], budget_s=0.5, seed=3)
        medians = {name: timing.stats(r["event"])["medianMs"] for name, r in raw.items()}
        counts = {name: len(r["event"]) for name, r in raw.items()}
        return timer, medians, counts

    def test_short_head_start_that_covers_gives_the_full_ones_events(self):
        full, full_ms, full_n = self.time(timing.HEAD_START_CYCLES, host_ms=0.02)
        short, short_ms, short_n = self.time(timing.SCREEN_HEAD_START_CYCLES, host_ms=0.02)
        self.assertEqual(short.last_head_start, timing.SCREEN_HEAD_START_CYCLES)
        self.assertEqual(max(short.last_exposed.values()), 0.0)
        for name in full_ms:
            self.assertAlmostEqual(short_ms[name], full_ms[name], places=6)
        self.assertEqual(short_n, full_n)  # as many samples, in less time

    def test_a_host_side_longer_than_the_short_head_start_gets_one_that_covers_it(self):
        """The screen's head start is fitted to the host side the budget's estimate measured
        (0.159 ms here: twice that and the margin is 0.338 ms, 676,000 cycles at the 2 GHz
        bound, 700,000 in steps): the events hold the GPU work alone, timed once."""
        timer, medians, _ = self.time(timing.SCREEN_HEAD_START_CYCLES, host_ms=0.15)
        self.assertEqual(timer.last_head_start, 700_000)
        self.assertFalse(timer.last_retimed)
        self.assertEqual(max(timer.last_exposed.values()), 0.0)
        self.assertAlmostEqual(medians["baseline"], 0.30, places=6)
        self.assertAlmostEqual(medians["candidate"], 0.20, places=6)

    def test_a_host_side_that_outgrows_the_fitted_head_start_is_timed_again_with_the_full_one(self):
        """The estimate saw a short host side (0.02 ms), the calls after it take 0.15 ms: the
        short run is exposed on every call, stops after ABORT_ROUNDS rounds, and the
        configuration is timed again with the full head start, which covers them."""
        calls = {"baseline": 0, "candidate": 0}

        def impl(name, gpu_ms):
            def call(_):
                calls[name] += 1
                self.stream.launch(0.02 if calls[name] <= 4 else 0.15, gpu_ms)  # 3 warm-ups, 1 estimate

            return call

        runs = []
        timer = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        real_run = timer._run

        def run(impls, args, iters, seed, prepare, cycles, stop=None):
            out, exposed = real_run(impls, args, iters, seed, prepare, cycles, stop)
            runs.append((cycles, len(out["candidate"]["event"]), iters))
            return out, exposed

        timer._run = run
        raw = timer.interleaved(
            {"baseline": impl("baseline", 0.30), "candidate": impl("candidate", 0.20)}, [None], budget_s=0.5, seed=3
        )
        self.assertEqual(runs[0][:2], (timing.SCREEN_HEAD_START_CYCLES, timing.ABORT_ROUNDS))
        self.assertEqual(runs[1][0], timing.HEAD_START_CYCLES)
        self.assertEqual(runs[1][1], runs[1][2])  # the full run takes every round the budget gives
        self.assertEqual((timer.last_head_start, timer.last_retimed), (timing.HEAD_START_CYCLES, True))
        self.assertAlmostEqual(timing.stats(raw["baseline"]["event"])["medianMs"], 0.30, places=6)
        self.assertAlmostEqual(timing.stats(raw["candidate"]["event"])["medianMs"], 0.20, places=6)

    def test_the_fitted_head_start_is_at_most_the_full_one(self):
        timer = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        self.assertEqual(timer.fitted_cycles(0.0), timing.SCREEN_HEAD_START_CYCLES)
        self.assertEqual(timer.fitted_cycles(5.0), timing.HEAD_START_CYCLES)
        self.assertEqual(fake_timer(self.stream, timing.HEAD_START_CYCLES).fitted_cycles(0.0), timing.HEAD_START_CYCLES)

    def test_without_the_retry_the_events_would_hold_the_launch(self):
        """What the check guards against: behind a head start the host side outlasts, the
        events measure host time too (here the candidate would look 0.05 ms slower)."""
        timer = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        raw, exposed = timer._run(self.impls(0.15), [None], 20, 3, None, timing.SCREEN_HEAD_START_CYCLES)
        self.assertEqual(exposed, {"baseline": 1.0, "candidate": 1.0})
        # two exposed calls of 20 rounds already exceed the limit: the run stops there
        self.assertEqual(len(raw["candidate"]["event"]), 2)
        self.assertGreater(timing.stats(raw["candidate"]["event"])["medianMs"], 0.24)

    def test_the_full_head_start_is_never_retried(self):
        timer, _, counts = self.time(timing.HEAD_START_CYCLES, host_ms=0.7)
        self.assertEqual(timer.last_head_start, timing.HEAD_START_CYCLES)
        self.assertFalse(timer.last_retimed)
        self.assertGreater(counts["candidate"], timing.ABORT_ROUNDS)  # never cut short either
        self.assertEqual(max(timer.last_exposed.values()), 1.0)

    def test_the_clock_bound_follows_a_faster_gpu(self):
        """A GPU that clocks above 2 GHz runs the sleep shorter: the bound rises with it, so a
        host side that a 2 GHz bound would call covered is exposed there."""
        self.assertEqual(fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES).cycles_per_ms, timing.CYCLES_PER_MS)
        self.stream.clock_mhz = 2520
        fast = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        self.assertGreater(fast.cycles_per_ms, 2520e3)  # above the true clock, whatever the launch gap
        self.assertLessEqual(fast.cycles_per_ms, 1.1 * 2520e3)
        self.assertLess(timing.covered_ms(timing.SCREEN_HEAD_START_CYCLES, fast.cycles_per_ms), 200_000 / 2520e3)

    def test_overhead_is_measured_per_head_start(self):
        timer = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        short = timer.overhead_ms()
        full = timer.overhead_ms(timing.HEAD_START_CYCLES)
        self.assertGreater(full - short, 0.3)
        self.assertEqual(timer.overhead_ms(), short)  # measured once


if __name__ == "__main__":
    unittest.main()
