"""nvcc flags a build may be given: only those that keep every result bit for bit, checked
by the harness itself whoever asks, and part of the build's cache key."""

import os
import shutil
import tempfile
import unittest

from evokernel_harness.candidates.build import FlagError, build, check_flags, content_hash

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


class FlagTest(unittest.TestCase):
    def test_allowed_flags_pass_sorted(self):
        flags = ["-maxrregcount=64", "--ptxas-options=-dlcm=cg", "-extra-device-vectorization"]
        self.assertEqual(check_flags(flags), sorted(flags))

    def test_precision_lowering_and_unknown_flags_are_refused(self):
        for flag in [
            "--use_fast_math",
            "-ftz=true",
            "--prec-div=false",
            "--fmad=true",
            "-maxrregcount=64 -ftz=true",
            "-DFAST=1",
            "-o/tmp/x",
            "-Xcompiler=-ffast-math",
            "--ptxas-options=-dlcm=ca --use_fast_math",
        ]:
            with self.assertRaises(FlagError, msg=flag):
                check_flags([flag])

    def test_flags_change_the_cache_key(self):
        plain = content_hash("evk", "k", [], "sm_90")
        capped = content_hash("evk", "k", [], "sm_90", flags=["-maxrregcount=64"])
        self.assertNotEqual(plain, capped)

    @unittest.skipIf(shutil.which("nvcc") is None, "nvcc is not installed")
    def test_an_evk_build_passes_the_flags_to_nvcc(self):
        with tempfile.TemporaryDirectory() as cache:
            kernel = os.path.join(REPO, "kernels", "softmax", "kernel.cu")
            record = build(kernel, cache, flags=["-maxrregcount=64"])
            self.assertTrue(record["ok"], record["log"][-2000:])
            self.assertIn("-maxrregcount=64", record["log"].splitlines()[0])
            with self.assertRaises(FlagError):
                build(kernel, cache, flags=["--use_fast_math"])

    def test_a_python_candidate_takes_no_flags(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.py")
            with open(path, "w") as f:
                f.write("def forward(x):\n    return x\n")
            with self.assertRaises(FlagError):
                build(path, tmp, flags=["-maxrregcount=64"])


@unittest.skipIf(shutil.which("nvcc") is None, "nvcc is not installed")
class ShimObjectTest(unittest.TestCase):
    """The shim every evk candidate links (evk_shim.cu) is compiled once per cache and linked
    as an object, not compiled again with each candidate (half of a candidate's nvcc time)."""

    def test_two_candidates_link_one_shim_object_and_export_its_calls(self):
        import ctypes

        kernel = os.path.join(REPO, "kernels", "softmax", "kernel.cu")
        with tempfile.TemporaryDirectory() as cache:
            records = [build(kernel, cache, [f"VEC={vec}"]) for vec in (1, 4)]
            objects = os.listdir(os.path.join(cache, "shim"))
            shims = [name for name in objects if name.endswith(".o")]
            self.assertEqual(len(shims), 1, objects)
            for record in records:
                self.assertTrue(record["ok"], record["log"][-2000:])
                command = record["log"].splitlines()[0].split()
                self.assertEqual(command[-1], os.path.join(cache, "shim", shims[0]))
                self.assertNotIn("evk_shim.cu", " ".join(command))
                lib = ctypes.CDLL(record["artifact"])
                self.assertTrue(hasattr(lib, "evk_shim_last_error") and hasattr(lib, "evk_shim_error_string"))


if __name__ == "__main__":
    unittest.main()
