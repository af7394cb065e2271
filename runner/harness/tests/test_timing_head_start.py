"""The timer's head start on the CPU, against a model of a GPU stream: a short head start
(the search's screen) gives the same events as the full one when it covers the call's host
side, and a call whose host side outlasts it is timed again with the full one; the number of
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

    def test_a_host_side_longer_than_the_short_head_start_is_timed_again_with_the_full_one(self):
        timer, medians, _ = self.time(timing.SCREEN_HEAD_START_CYCLES, host_ms=0.15)
        self.assertEqual(timer.last_head_start, timing.HEAD_START_CYCLES)
        # the full head start covers 0.15 ms of host side: the events hold the GPU work alone
        self.assertAlmostEqual(medians["baseline"], 0.30, places=6)
        self.assertAlmostEqual(medians["candidate"], 0.20, places=6)

    def test_without_the_retry_the_events_would_hold_the_launch(self):
        """What the check guards against: behind a head start the host side outlasts, the
        events measure host time too (here the candidate would look 0.05 ms slower)."""
        timer = fake_timer(self.stream, timing.SCREEN_HEAD_START_CYCLES)
        raw, exposed = timer._run(self.impls(0.15), [None], 20, 3, None, timing.SCREEN_HEAD_START_CYCLES)
        self.assertEqual(exposed, {"baseline": 1.0, "candidate": 1.0})
        self.assertGreater(timing.stats(raw["candidate"]["event"])["medianMs"], 0.24)

    def test_the_full_head_start_is_never_retried(self):
        timer, _, _ = self.time(timing.HEAD_START_CYCLES, host_ms=0.7)
        self.assertEqual(timer.last_head_start, timing.HEAD_START_CYCLES)
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
