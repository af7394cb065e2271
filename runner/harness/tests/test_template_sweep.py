"""lab/template-sweep.py without a GPU: its space (constraints, defaults, --fix), and its
plumbing in --dry-run (the reference stands in for each built combination): every
combination gets a record, a child that dies mid-check costs only the combination it was
checking, and the ones checked before it are still timed."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCRIPT = os.path.join(REPO, "lab", "template-sweep.py")
SMALL = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")

spec = importlib.util.spec_from_file_location("template_sweep", SCRIPT)
sweep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep)


class ConstraintLanguage(unittest.TestCase):
    def test_c_operators(self):
        rule = sweep.constraint_fn("A * B <= 1024 && (C == 0 || !D)")
        self.assertTrue(rule({"A": 32, "B": 32, "C": 0, "D": 1}))
        self.assertFalse(rule({"A": 64, "B": 32, "C": 0, "D": 1}))
        self.assertFalse(rule({"A": 1, "B": 1, "C": 1, "D": 1}))
        self.assertTrue(rule({"A": 1, "B": 1, "C": 1, "D": 0}))
        self.assertTrue(sweep.constraint_fn("A != 3")({"A": 4}))
        self.assertTrue(sweep.constraint_fn("A % 4 == 0 && A / 4 >= 2")({"A": 8}))

    def test_refuses_what_is_not_arithmetic(self):
        for text in ("__import__('os')", "A.b > 1", "[A] == 1", "A > 1.5"):
            with self.assertRaises(SystemExit):
                sweep.constraint_fn(text)


class Space(unittest.TestCase):
    def test_softmax_template(self):
        _, combos, default = sweep.space(os.path.join(REPO, "kernels", "softmax"), {}, False)
        self.assertEqual(
            default, {"THREADS_PER_ROW": 256, "ROWS_PER_BLOCK": 1, "VEC": 1, "ONLINE": 1, "CACHE": 0, "UNROLL": 4}
        )
        self.assertIn(default, combos)
        self.assertTrue(all(c["THREADS_PER_ROW"] * c["ROWS_PER_BLOCK"] <= 1024 for c in combos))
        self.assertTrue(all(c["UNROLL"] == 4 for c in combos))  # without --all
        self.assertEqual(len(combos), 18 * 2 * 2 * 3)
        _, every, _ = sweep.space(os.path.join(REPO, "kernels", "softmax"), {}, True)
        self.assertEqual(len(every), 3 * len(combos))
        _, fixed, _ = sweep.space(os.path.join(REPO, "kernels", "softmax"), {"VEC": 4}, False)
        self.assertEqual({c["VEC"] for c in fixed} - {default["VEC"]}, {4})

    def test_a_fixed_value_a_task_does_not_take_leaves_its_axis_free(self):
        # one --fix VEC=8 for the bf16 templates and rmsnorm_backward (VEC 1 or 4) in one batch
        _, combos, _ = sweep.space(os.path.join(REPO, "kernels", "rmsnorm_backward"), {"VEC": 8}, False)
        self.assertEqual({c["VEC"] for c in combos}, {1, 4})
        _, bf16, _ = sweep.space(os.path.join(REPO, "kernels", "softmax_bf16"), {"VEC": 8}, False)
        self.assertEqual({c["VEC"] for c in bf16}, {8, 2})  # 2: the template's default, always swept

    def test_cross_entropy_constraint_leaves_out_a_cache_without_two_passes(self):
        _, combos, _ = sweep.space(os.path.join(REPO, "kernels", "cross_entropy"), {}, False)
        self.assertFalse(any(c["ONLINE"] == 1 and c["CACHE"] != 0 for c in combos))


@unittest.skipIf(shutil.which("nvcc") is None, "nvcc is not installed")
class DryRun(unittest.TestCase):
    def run_sweep(self, out, **env):
        proc = subprocess.run(
            [sys.executable, SCRIPT, SMALL, "--dry-run", "--no-compile", "--out", out],
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "EVOKERNEL_CACHE": os.path.join(out, "cache"), **env},
        )
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(os.path.join(out, "small_softmax.json")) as f:
            return json.load(f), proc.stdout

    def test_every_combination_is_built_checked_and_timed(self):
        with tempfile.TemporaryDirectory() as out:
            record, stdout = self.run_sweep(out)
        self.assertEqual(record["combinations"], 3)
        self.assertEqual(record["correct"], 3)
        names = [c["name"] for c in record["rows"][0]["configs"]]
        # visible and held-out configurations, and the odd one again off its alignment
        self.assertIn("tall-17x3001", names)
        self.assertIn("odd-33x257+shifted", names)
        self.assertEqual(sorted(record["timing"]["round1"]), ["0", "1", "2"])
        self.assertEqual(len(record["timing"]["configs"]), 2)
        self.assertIn("## small_softmax: 3 combinations, 3 built, 3 correct", stdout)

    def test_a_child_that_dies_costs_one_combination(self):
        with tempfile.TemporaryDirectory() as out:
            record, stdout = self.run_sweep(out, EVK_SWEEP_DRY_CRASH="1")
        self.assertIn("child exit 9", stdout)
        self.assertEqual([r["ok"] for r in record["rows"]], [True, False, True])
        self.assertEqual(record["rows"][1]["reason"], "crash")
        # the combination checked before the crash is timed all the same
        self.assertEqual(sorted(record["timing"]["round1"]), ["0", "2"])


if __name__ == "__main__":
    unittest.main()
