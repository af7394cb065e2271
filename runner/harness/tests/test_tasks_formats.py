"""The public formats run unchanged on the CPU: KernelBench problems with ModelNew
candidates (declared, derived odd-size and signed, mixed-scale configurations) and
robust-kbench folders (forward; backward through AutogradFunction)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FIX = os.path.join(REPO, "test", "fixtures")


def harness(*argv):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "runner", "harness")}
        proc = subprocess.run(
            [sys.executable, "-m", "evokernel_harness", *argv, "--out", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise AssertionError(f"harness exit {proc.returncode}:\n{proc.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


class KernelBenchTest(unittest.TestCase):
    def test_derived_configurations(self):
        """One declared shape becomes several: odd sizes (one held out) and signed inputs;
        constants computed from varied ones at import (bias_shape) follow them."""
        rec = harness("inspect", "--probe", "--task", os.path.join(FIX, "kernelbench", "76_Gemm_Add_ReLU.py"))
        self.assertTrue(rec["ok"], rec)
        names = {c["name"]: c for c in rec["configs"]}
        self.assertEqual(
            set(names), {"declared", "declared-signed-mixed", "odd-sizes", "small-odd-sizes", "heldout-odd-sizes"}
        )
        self.assertTrue(names["heldout-odd-sizes"]["heldout"])
        for c in ("odd-sizes", "small-odd-sizes"):
            for v in names[c]["dims"].values():
                if v >= 16:
                    self.assertTrue(v % 8 and v % 32, f"{c}: {names[c]['dims']}")

    def test_modelnew_passes(self):
        for problem in ("23_Softmax", "76_Gemm_Add_ReLU"):
            with self.subTest(problem=problem):
                rec = harness(
                    "verify",
                    "--device",
                    "cpu",
                    "--heldout",
                    "--seed",
                    "7",
                    "--task",
                    os.path.join(FIX, "kernelbench", f"{problem}.py"),
                    "--candidate",
                    os.path.join(FIX, "kernelbench_modelnew", f"{problem}_new.py"),
                )
                self.assertTrue(rec["ok"], rec["message"])
                self.assertEqual(len(rec["configs"]), 5)

    def test_modelnew_fixed_to_declared_shape_is_rejected(self):
        """Hack class 10: right only on the declared dim."""
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "7",
            "--task",
            os.path.join(FIX, "kernelbench", "23_Softmax.py"),
            "--candidate",
            os.path.join(HERE, "candidates", "kb_softmax_fixed_dim.py"),
        )
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["reason"], "shape-specific", rec["message"])


class RobustKBenchTest(unittest.TestCase):
    def test_forward_candidate_passes_every_configuration(self):
        folder = os.path.join(FIX, "robust-kbench", "linear_relu")
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "7",
            "--task",
            folder,
            "--candidate",
            os.path.join(folder, "candidate_forward.py"),
        )
        self.assertTrue(rec["ok"], rec["message"])
        self.assertGreaterEqual(len(rec["configs"]), 9)

    def test_backward_compares_every_gradient(self):
        """The backward task runs through AutogradFunction.backward_fn; a backward that
        gets the bias gradient wrong is caught (static checks relaxed: CPU, torch-written)."""
        folder = os.path.join(FIX, "robust-kbench", "linear_relu")
        info = harness("inspect", "--task", folder + "#backward")
        self.assertTrue(info["ok"], info)
        self.assertTrue(info["backward"])
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(
                "import torch\n\n"
                "def backward(grad_output, x, weight, bias):\n"
                "    mask = (torch.addmm(bias, x, weight.t()) > 0).to(grad_output.dtype)\n"
                "    g = grad_output * mask\n"
                "    return g.mm(weight), g.t().mm(x), g.mean(0)\n"
            )
        try:
            rec = harness(
                "verify", "--device", "cpu", "--seed", "7", "--task", folder + "#backward", "--candidate", f.name
            )
        finally:
            os.unlink(f.name)
        self.assertFalse(rec["ok"])
        self.assertIn(rec["reason"], ("mismatch", "shape-specific", "reduced-precision"), rec["message"])
        self.assertIn("output", rec["mismatch"]["output"])


# Reaches torch.utils.cpp_extension through `import torch` alone, as a candidate written for
# KernelBench's or robust-kbench's harness may: theirs import the submodule before they load it.
SUBMODULE_KB = """import torch
import torch.nn as nn

load_inline = torch.utils.cpp_extension.load_inline  # no `import torch.utils.cpp_extension`


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.build = torch.utils.cpp_extension.load_inline  # and again at construction

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
"""
SUBMODULE_RKB = """import torch

load = torch.utils.cpp_extension.load  # no `import torch.utils.cpp_extension`


def forward(x, weight, bias):
    return torch.clamp_min(torch.addmm(bias, x, weight.t()), 0.0)
"""
SUBMODULE_NATIVE = """import torch

load_inline = torch.utils.cpp_extension.load_inline


def forward(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
"""


def verify_loaded(task, name, source):
    """verify --device cpu of a candidate loaded as the runner has it loaded: from its build's
    artifact (given), so no build in this process imports anything on its behalf."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(source)
        return harness("verify", "--device", "cpu", "--task", task, "--candidate", path, "--artifact", path)


class FormatHarnessTest(unittest.TestCase):
    """Issue 33.5: a public format's candidate runs as its own harness runs it
    (docs/DESIGN.md, "What each format's harness provides")."""

    def test_kernelbench_candidates_see_cpp_extension_imported(self):
        rec = verify_loaded(os.path.join(FIX, "kernelbench", "23_Softmax.py"), "kb_submodule.py", SUBMODULE_KB)
        self.assertTrue(rec["ok"], rec["message"])

    def test_robust_kbench_candidates_see_cpp_extension_imported(self):
        rec = verify_loaded(os.path.join(FIX, "robust-kbench", "linear_relu"), "rkb_submodule.py", SUBMODULE_RKB)
        self.assertTrue(rec["ok"], rec["message"])

    def test_a_native_candidate_imports_what_it_uses(self):
        rec = verify_loaded(os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax"), "n.py", SUBMODULE_NATIVE)
        self.assertEqual((rec["status"], rec["reason"]), ("rejected", "load-error"), rec)
        self.assertIn("cpp_extension", rec["message"])


def verify_source(task, name, source):
    """verify --device cpu of a candidate written from `source` into a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(source)
        return harness(
            "verify", "--device", "cpu", "--task", task, "--candidate", path, "--cache", os.path.join(tmp, "cache")
        )


class LoadFailureRecordTest(unittest.TestCase):
    """A candidate that does not build or load is a record with its own reason, never a
    harness failure: the build's log for a compile error, what to do for a load error."""

    def test_compile_error_carries_the_log(self):
        rec = verify_source(
            os.path.join(REPO, "kernels", "softmax"),
            "broken.cu",
            '#include <evokernel.h>\nextern "C" int evk_forward(const EvkCall* call) { this is not cuda; }\n',
        )
        self.assertEqual((rec["status"], rec["reason"]), ("compile-error", "compile-error"), rec)
        self.assertIn("error", rec["message"])
        self.assertFalse(rec["message"].startswith("compile-error:"), rec["message"][:80])

    def test_python_candidate_without_entry_is_a_load_error(self):
        rec = verify_source(
            os.path.join(FIX, "kernelbench", "23_Softmax.py"), "empty.py", "import torch\n\nVALUE = 1\n"
        )
        self.assertEqual((rec["status"], rec["reason"]), ("rejected", "load-error"), rec)

    def test_python_candidate_raising_on_import_is_a_load_error(self):
        # on the H100 (2026-11-26) this was "the harness failed (exit 4)": the candidate's
        # exception left the harness as its own
        rec = verify_source(
            os.path.join(FIX, "kernelbench", "23_Softmax.py"), "raises.py", "raise RuntimeError('no kernel today')\n"
        )
        self.assertEqual((rec["status"], rec["reason"]), ("rejected", "load-error"), rec)
        self.assertIn("RuntimeError: no kernel today", rec["message"])


if __name__ == "__main__":
    unittest.main()
