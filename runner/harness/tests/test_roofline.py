"""The roofline floor's arithmetic peak for fp32 results counts 3xTF32 on the tensor cores: a
floor from the FMA rate alone would call an honest tensor-core gemm below-floor."""

import unittest
from unittest import mock

from evokernel_harness import roofline
from evokernel_harness.bench import BELOW_FLOOR
from evokernel_harness.roofline import floor_ms

GFLOP = 10**9
CEILINGS = {"bandwidthGBs": 3000.0, "fp32Tflops": 50.0, "bf16Tflops": 800.0, "tf32x3Tflops": 150.0}


class FloorTest(unittest.TestCase):
    def test_fp32_compute_floor_is_the_faster_of_fma_and_3xtf32(self):
        # 150 GFLOP at 150 TFLOP/s: 1 ms (the FMA rate alone would say 3 ms)
        self.assertAlmostEqual(floor_ms(0, 150 * GFLOP, "float32", CEILINGS), 1.0)
        slow_tensor = dict(CEILINGS, tf32x3Tflops=10.0)
        self.assertAlmostEqual(floor_ms(0, 150 * GFLOP, "float32", slow_tensor), 3.0)

    def test_ceilings_without_the_tensor_rate_keep_the_fma_floor(self):
        old = {k: v for k, v in CEILINGS.items() if k != "tf32x3Tflops"}
        self.assertAlmostEqual(floor_ms(0, 150 * GFLOP, "float32", old), 3.0)

    def test_half_precision_and_memory_floors_unchanged(self):
        self.assertAlmostEqual(floor_ms(0, 800 * GFLOP, "bfloat16", CEILINGS), 1.0)
        self.assertAlmostEqual(floor_ms(3 * GFLOP, 0, "float32", CEILINGS), 1.0)
        self.assertAlmostEqual(floor_ms(3 * GFLOP, 30 * GFLOP, "float32", CEILINGS), 1.0)

    def test_a_tensor_core_gemm_at_twice_the_fma_rate_is_not_below_the_floor(self):
        # an fp32 gemm at 100 TFLOP/s (3xTF32), with the FMA peak at 50: 1.5 ms for 150 GFLOP
        floor = floor_ms(0, 150 * GFLOP, "float32", CEILINGS)
        self.assertGreaterEqual(1.5, BELOW_FLOOR * floor)
        fma_only = floor_ms(0, 150 * GFLOP, "float32", dict(CEILINGS, tf32x3Tflops=0.0))
        self.assertLess(1.5, BELOW_FLOOR * fma_only)  # what it would have been refused by


class CeilingsTest(unittest.TestCase):
    """The library's matmul rates are timed only where the chip's peak is not known (it is the
    larger wherever it is): the ceilings come out the same, without the matmuls."""

    def measure(self, peaks):
        timed = []

        def matmul(dtype):
            timed.append(dtype)
            return 40.0

        with (
            mock.patch.object(roofline, "_copy_bandwidth", return_value=3000.0),
            mock.patch.object(roofline, "theoretical_peaks", return_value=peaks),
            mock.patch.object(roofline, "_matmul_tflops", side_effect=matmul),
        ):
            return roofline.measure_ceilings("Fake GPU"), timed

    def test_a_known_chip_times_no_matmul(self):
        ceilings, timed = self.measure({"fp32": 66.9, "tf32": 535.0, "bf16": 1070.0})
        self.assertEqual(timed, [])
        self.assertEqual(
            (ceilings["fp32Tflops"], ceilings["bf16Tflops"], ceilings["tf32x3Tflops"]), (66.9, 1070.0, 535.0 / 3)
        )

    def test_an_unknown_chip_times_each_rate(self):
        ceilings, timed = self.measure({})
        self.assertEqual(len(timed), 3)
        self.assertEqual(
            (ceilings["fp32Tflops"], ceilings["bf16Tflops"], ceilings["tf32x3Tflops"]), (40.0, 40.0, 40.0 / 3)
        )


if __name__ == "__main__":
    unittest.main()
