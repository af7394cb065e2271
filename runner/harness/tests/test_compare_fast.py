"""compare()'s float32 pass: wherever it answers, its verdict is the float64 pass's, and its
figures agree with them to float32's rounding; it leaves NaN/Inf, the edge of a bound and tiny
norms to the float64 pass (a test of each); the chunked pass agrees with one whole pass."""

import unittest
from unittest import mock

import torch

from evokernel_harness import compare as cmp
from evokernel_harness.compare import _compare_float32, bitwise_equal, compare, compare_float64

TOL = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5, "norm": 1e-5},
    torch.float16: {"atol": 1e-3, "rtol": 1e-3, "norm": 1e-3},
    torch.bfloat16: {"atol": 1e-2, "rtol": 1e-2, "norm": 5e-3},
}


def case(gen, dtype, n, noise, scale=1.0):
    expected = (torch.randn(n, generator=gen) * scale).to(dtype)
    got = (expected.float() + noise * torch.randn(n, generator=gen) * scale).to(dtype)
    return got, expected


class FastCompareTest(unittest.TestCase):
    def assert_agrees(self, got, expected, tol):
        fast = _compare_float32(got, expected, tol)
        exact = compare_float64(got, expected, tol)
        if fast is None:
            return False
        self.assertEqual(fast["ok"], exact["ok"], (fast, exact))
        self.assertEqual(fast["nonFinite"], exact["nonFinite"])
        for key in ("maxAbs", "maxRel", "normRel"):
            self.assertAlmostEqual(fast[key], exact[key], delta=1e-5 * abs(exact[key]) + 1e-30, msg=key)
        if exact["ok"] is False:  # the worst element's place matters where it is reported
            self.assertEqual(fast["index"], exact["index"])
            self.assertEqual((fast["got"], fast["expected"]), (exact["got"], exact["expected"]))
        return True

    def test_its_verdicts_are_the_float64_ones_over_noise_levels_dtypes_and_scales(self):
        gen = torch.Generator().manual_seed(7)
        answered = {True: 0, False: 0}
        for dtype, tol in TOL.items():
            for noise in (0.0, 1e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2, 0.1):
                for scale in (1e-3, 1.0, 1e3):
                    got, expected = case(gen, dtype, 4099, noise, scale)
                    with self.subTest(dtype=dtype, noise=noise, scale=scale):
                        if self.assert_agrees(got, expected, tol):
                            answered[_compare_float32(got, expected, tol)["ok"]] += 1
        # it answers both ways, or it saves nothing
        self.assertGreater(answered[True], 10)
        self.assertGreater(answered[False], 10)

    def test_one_element_off_is_found_where_float64_finds_it(self):
        gen = torch.Generator().manual_seed(3)
        got, expected = case(gen, torch.float32, 10007, 0.0)
        got[4321] += 0.25
        self.assertTrue(self.assert_agrees(got, expected, TOL[torch.float32]))
        self.assertFalse(compare(got, expected, TOL[torch.float32])["ok"])
        self.assertEqual(compare(got, expected, TOL[torch.float32])["index"], [4321])

    def test_nan_and_inf_are_left_to_float64(self):
        gen = torch.Generator().manual_seed(5)
        for bad in (float("nan"), float("inf"), float("-inf")):
            for where in ("got", "expected"):
                got, expected = case(gen, torch.float32, 1000, 0.0)
                (got if where == "got" else expected)[17] = bad
                with self.subTest(bad=bad, where=where):
                    self.assertIsNone(_compare_float32(got, expected, TOL[torch.float32]))
                    self.assertEqual(
                        compare(got, expected, TOL[torch.float32]), compare_float64(got, expected, TOL[torch.float32])
                    )

    def test_the_edge_of_a_bound_is_left_to_float64(self):
        tol = TOL[torch.float32]
        # rms just below 1 (the absolute part is atol itself) and the norm far from its bound;
        # element 10 is small, where float32's step (1.2e-10) is fine beside its bound
        expected = torch.full((1000,), 0.999)
        expected[10] = 1e-3
        e64 = float(expected[10])
        bound = tol["atol"] + tol["rtol"] * abs(e64)
        for factor in (1 - cmp.MARGIN / 3, 1.0, 1 + cmp.MARGIN / 3):
            got = expected.clone()
            got[10] = e64 + factor * bound
            ratio = (float(got[10]) - e64) / bound  # as stored in float32
            self.assertLess(abs(ratio - 1), cmp.MARGIN / 2)
            with self.subTest(factor=factor):
                self.assertIsNone(_compare_float32(got, expected, tol))
                self.assertEqual(compare(got, expected, tol)["ok"], ratio <= 1)
        for factor, ok in ((0.99, True), (1.01, False)):
            got = expected.clone()
            got[10] = e64 + factor * bound
            self.assertEqual(_compare_float32(got, expected, tol)["ok"], ok)
            self.assertTrue(self.assert_agrees(got, expected, tol))

    def test_a_zero_or_tiny_reference_is_left_to_float64(self):
        tol = TOL[torch.float32]
        for scale in (0.0, 1e-30, 1e-22):
            expected = torch.full((1000,), scale)
            with self.subTest(scale=scale):
                self.assertIsNone(_compare_float32(expected.clone(), expected, tol))

    def test_other_dtypes_are_left_to_float64(self):
        a = torch.arange(100)
        self.assertIsNone(_compare_float32(a, a.clone(), {"atol": 0.0, "rtol": 0.0, "norm": 0.0}))
        d = torch.randn(100, dtype=torch.float64)
        self.assertIsNone(_compare_float32(d, d.clone(), {"atol": 1e-9, "rtol": 1e-9, "norm": 1e-10}))
        self.assertIsNone(_compare_float32(d.float(), d, TOL[torch.float32]))

    def test_chunks_give_the_whole_pass_result(self):
        gen = torch.Generator().manual_seed(11)
        got, expected = case(gen, torch.float32, 5003, 1e-3)
        got[4999] += 1.0
        whole = _compare_float32(got, expected, TOL[torch.float32])
        for chunk in (7, 1000, 4999):
            with self.subTest(chunk=chunk), mock.patch.object(cmp, "FAST_CHUNK", chunk):
                part = _compare_float32(got, expected, TOL[torch.float32])
                self.assertAlmostEqual(part.pop("normRel"), whole["normRel"], delta=1e-6 * whole["normRel"])
                for key in ("maxAbs", "maxRel"):
                    self.assertAlmostEqual(part.pop(key), whole[key], delta=1e-6 * whole[key])
                self.assertEqual(part, {k: v for k, v in whole.items() if k not in ("normRel", "maxAbs", "maxRel")})
        self.assertEqual(whole["index"], [4999])

    def test_the_float32_pass_uses_the_bound_references(self):
        """A candidate that replaced torch.max (say) before the comparison changes nothing: the
        pass calls the references guards.py bound at import."""
        gen = torch.Generator().manual_seed(2)
        got, expected = case(gen, torch.float32, 1000, 0.1)

        def norm(x, *a, **k):  # the reference's norm large, the error's nothing
            return torch.tensor(1e6 if x.data_ptr() == expected.data_ptr() else 0.0)

        with (
            mock.patch.object(torch, "max", lambda *a, **k: (torch.tensor(0.0), torch.tensor(0))),
            mock.patch.object(torch.linalg, "vector_norm", norm),
        ):
            self.assertFalse(compare(got, expected, TOL[torch.float32])["ok"])


class BitwiseEqualTest(unittest.TestCase):
    def test_nan_in_the_same_places_is_equal_and_anything_else_is_not(self):
        a = torch.tensor([1.0, float("nan"), -0.0])
        self.assertTrue(bitwise_equal(a, a.clone()))
        self.assertTrue(bitwise_equal(a, torch.tensor([1.0, float("nan"), 0.0])))  # == as before
        self.assertFalse(bitwise_equal(a, torch.tensor([1.0, 2.0, 0.0])))
        self.assertFalse(bitwise_equal(a, torch.tensor([float("nan"), float("nan"), 0.0])))
        self.assertTrue(bitwise_equal(torch.arange(5), torch.arange(5)))
        self.assertFalse(bitwise_equal(torch.arange(5), torch.arange(5) + 1))
        self.assertFalse(bitwise_equal(torch.arange(5), torch.arange(5).float()))


if __name__ == "__main__":
    unittest.main()
