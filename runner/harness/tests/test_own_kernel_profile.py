"""The profile a proposal reads: the kernels of one call, longest first, and never a failure
when the profiler is missing."""

import unittest
from unittest import mock

from evokernel_harness import own_kernel


class TopKernelsTest(unittest.TestCase):
    def test_longest_first_at_most_five(self):
        stats = {f"k{i}": (float(i), 1) for i in range(8)}
        stats["long_" + "x" * 300] = (100.0, 3)
        with mock.patch.object(own_kernel, "_kernel_stats", return_value=stats):
            top = own_kernel.top_kernels(lambda: None)
        self.assertEqual(len(top), 5)
        self.assertEqual(top[0]["calls"], 3)
        self.assertEqual(len(top[0]["name"]), 200)
        self.assertEqual([k["name"] for k in top[1:]], ["k7", "k6", "k5", "k4"])
        self.assertEqual(top[1]["us"], 7.0)

    def test_no_profiler_means_no_profile(self):
        with mock.patch.object(own_kernel, "_kernel_stats", side_effect=RuntimeError("no CUPTI")):
            self.assertIsNone(own_kernel.top_kernels(lambda: None))


class PhasesTest(unittest.TestCase):
    def test_laps_add_up_per_name(self):
        from evokernel_harness.bench import _Phases

        clock = iter([0.0, 1.0, 1.5, 4.0, 4.25])
        with mock.patch("evokernel_harness.bench.time.perf_counter", lambda: next(clock)):
            phases = _Phases()
            phases.lap("inputs")
            phases.lap("timing")
            phases.lap("inputs")
            phases.lap("checks")
        self.assertEqual(phases.seconds, {"inputs": 3.5, "timing": 0.5, "checks": 0.25})


if __name__ == "__main__":
    unittest.main()
