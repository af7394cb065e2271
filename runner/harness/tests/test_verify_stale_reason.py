"""Issue 33.6: a stale output's reason says what went stale. The same-buffer refill writes new
values into the activations and the parameters; when the output is stale, each kind is
refilled alone to find which the output ignored, and the record says so (in the message and
in mismatch.stale): a weight copied at construction is not "cached by pointer"."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from evokernel_harness.verify import stale_message

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
GEMM = os.path.join(REPO, "test", "fixtures", "kernelbench", "76_Gemm_Add_ReLU.py")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")


def verify(task, candidate, launch=("-m", "evokernel_harness")):
    """The verify record of candidate on task, the harness started as `python LAUNCH…`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        proc = subprocess.run(
            [sys.executable, *launch, "verify", "--device", "cpu", "--seed", "7"]
            + ["--task", task, "--candidate", candidate, "--artifact", candidate, "--out", out],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise AssertionError(f"harness exit {proc.returncode}:\n{proc.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


# the harness with the stream check answering that work escaped the caller's stream (on the
# GPU, a side stream's kernel still running when the output is read; the CPU has no streams)
ESCAPED = (
    "import sys\n"
    "from evokernel_harness import verify\n"
    "verify.probe_side_stream = lambda v, case: 'kernel k ran 40 us after the call returned'\n"
    "from evokernel_harness.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


class StaleReasonTest(unittest.TestCase):
    def test_a_stale_output_whose_work_escaped_the_stream_is_named_side_stream(self):
        rec = verify(GEMM, os.path.join(HERE, "candidates", "kb_gemm_pointer_cache.py"), launch=("-c", ESCAPED))
        self.assertEqual(rec["reason"], "side-stream", rec["message"])
        self.assertIn("after new values were written into the same buffers", rec["message"])
        self.assertIn("kernel k ran 40 us after the call returned", rec["message"])
        self.assertNotIn("cached", rec["message"])

    def test_a_weight_copied_at_construction_is_named_so(self):
        rec = verify(GEMM, os.path.join(HERE, "candidates", "kb_gemm_weight_copied_at_construction.py"))
        self.assertEqual(rec["reason"], "result-caching", rec["message"])
        self.assertEqual(
            rec["mismatch"]["stale"], {"refilled": ["activations", "parameters"], "ignored": ["parameters"]}
        )
        self.assertIn("its output ignores new weights (computed from a copy made at construction)", rec["message"])
        self.assertIn("it follows new activations", rec["message"])
        self.assertNotIn("by pointer", rec["message"])

    def test_a_cache_by_pointer_ignores_both(self):
        rec = verify(GEMM, os.path.join(HERE, "candidates", "kb_gemm_pointer_cache.py"))
        self.assertEqual(rec["reason"], "result-caching", rec["message"])
        self.assertEqual(
            rec["mismatch"]["stale"],
            {"refilled": ["activations", "parameters"], "ignored": ["activations", "parameters"]},
        )
        self.assertIn(
            "ignores new activations and new parameters: results cached by pointer or by value", rec["message"]
        )

    def test_a_function_tasks_inputs(self):
        rec = verify(SMALL_SOFTMAX, os.path.join(HERE, "candidates", "h11_pointer_cache.py"))
        self.assertEqual(rec["reason"], "result-caching", rec["message"])
        self.assertEqual(rec["mismatch"]["stale"], {"refilled": ["inputs"], "ignored": ["inputs"]})
        self.assertIn("(inputs) the output was stale: its output ignores new inputs", rec["message"])


class StaleMessageTest(unittest.TestCase):
    def test_the_words(self):
        self.assertEqual(
            stale_message(["activations", "parameters"], ["parameters"], constructed=False),
            "after new values were written into the same buffers (activations and parameters) the output was "
            "stale: its output ignores new weights (computed from a copy of them, or a result, kept from an "
            "earlier call); it follows new activations",
        )
        self.assertIn(
            "ignores new activations: results cached by pointer or by value; it follows new parameters",
            stale_message(["activations", "parameters"], ["activations"], constructed=True),
        )
        self.assertIn("each kind alone is followed", stale_message(["activations", "parameters"], [], True))


if __name__ == "__main__":
    unittest.main()
