"""Issue 33.7: a KernelBench ModelNew that builds its extension when constructed is
constructed in the build stage (off the GPU lock), once per build, in the environment
verification loads it with; its own errors there are said and left to verification."""

import json
import os
import sys
import tempfile
import textwrap
import unittest

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, HARNESS)

from evokernel_harness.candidates.build import PREPARED, build  # noqa: E402
from evokernel_harness.tasks import load_task  # noqa: E402

PROBLEM = textwrap.dedent(
    """
    import torch

    class Model(torch.nn.Module):
        def __init__(self, features):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(features))

        def forward(self, x):
            return x * self.scale

    def get_inputs():
        return [torch.randn(2, 8)]

    def get_init_inputs():
        return [8]
    """
)

# Stands in for `self.ext = load_inline(...)` in __init__ (a real one compiles torch's headers
# for minutes on two cores): it records where it would build, and when.
CANDIDATE = textwrap.dedent(
    """
    import json, os
    import torch

    MARKS = {marks!r}

    class ModelNew(torch.nn.Module):
        def __init__(self, features):
            super().__init__()
            {fail}
            self.scale = torch.nn.Parameter(torch.ones(features))
            # load_inline(name="evk_scale", ...) would build in TORCH_EXTENSIONS_DIR here
            with open(MARKS, "a") as f:
                f.write(json.dumps({{"dir": os.environ.get("TORCH_EXTENSIONS_DIR"), "features": features}}) + "\\n")

        def forward(self, x):
            return x * self.scale
    """
)


class BuildPrepareTest(unittest.TestCase):
    def setUp(self):
        # build() sets the extension's environment (CXX wrappers in the cache, its folder) in
        # this process, as it does in the build's own child: kept from the tests that follow
        self.environ = dict(os.environ)
        self.addCleanup(self.restore_environ)
        self.tmp = tempfile.mkdtemp()
        self.marks = os.path.join(self.tmp, "marks.jsonl")
        problem = os.path.join(self.tmp, "1_Scale.py")
        with open(problem, "w") as f:
            f.write(PROBLEM)
        self.task = load_task(problem)
        self.cache = os.path.join(self.tmp, "cache")

    def restore_environ(self):
        os.environ.clear()
        os.environ.update(self.environ)

    def tearDown(self):
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)

    def candidate(self, name="cand.py", fail=""):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(CANDIDATE.format(marks=self.marks, fail=fail or "pass"))
        return path

    def marked(self):
        if not os.path.exists(self.marks):
            return []
        with open(self.marks) as f:
            return [json.loads(line) for line in f]

    def test_construction_happens_in_the_build_once(self):
        rec = build(self.candidate(), self.cache, task=self.task)
        self.assertTrue(rec["ok"], rec["log"])
        self.assertIn("evk-prepare: ModelNew constructed", rec["log"])
        marks = self.marked()
        self.assertEqual(len(marks), 1)
        self.assertEqual(marks[0]["features"], 8)  # the problem's init inputs
        # where verification's load_inline looks (extension_env, applied again when it loads)
        out_dir = os.path.dirname(rec["artifact"])
        self.assertEqual(marks[0]["dir"], os.path.join(out_dir, "torch_extensions"))
        self.assertTrue(os.path.exists(os.path.join(out_dir, PREPARED)))
        again = build(self.candidate(), self.cache, task=self.task)
        self.assertTrue(again["cached"])
        self.assertEqual(len(self.marked()), 1)

    def test_a_build_without_the_task_is_prepared_when_the_task_comes(self):
        first = build(self.candidate(), self.cache)
        self.assertTrue(first["ok"], first["log"])
        self.assertEqual(self.marked(), [])
        second = build(self.candidate(), self.cache, task=self.task)
        self.assertTrue(second["cached"])
        self.assertIn("evk-prepare: ModelNew constructed", second["log"])
        self.assertEqual(len(self.marked()), 1)

    def test_its_own_error_is_said_and_left_to_verification(self):
        rec = build(self.candidate(fail="raise RuntimeError('no GPU here')"), self.cache, task=self.task)
        self.assertTrue(rec["ok"], rec["log"])
        self.assertIn("constructing ModelNew failed (RuntimeError: no GPU here)", rec["log"])

    def test_a_candidate_that_builds_nothing_is_not_constructed(self):
        path = os.path.join(self.tmp, "plain.py")
        with open(path, "w") as f:
            f.write(CANDIDATE.format(marks=self.marks, fail="pass").replace("load_inline", "an extension"))
        rec = build(path, self.cache, task=self.task)
        self.assertTrue(rec["ok"], rec["log"])
        self.assertNotIn("evk-prepare", rec["log"])
        self.assertEqual(self.marked(), [])


if __name__ == "__main__":
    unittest.main()
