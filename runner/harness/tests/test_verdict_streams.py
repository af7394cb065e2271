"""verdict.check_streams makes several calls of one staged case (streams.check: the device's
tail over a few calls, then a profiled one). A robust-kbench backward task's staged call runs
once (autograd frees the graph): on the H100 (2026-11-26) every backward task crashed there
("exit 4, no record"). Run on the CPU with streams.check replaced by one that calls as it does."""

import os
import tempfile
import unittest
from unittest import mock

import types

import torch

from evokernel_harness import diagnose, streams, verdict
from evokernel_harness.candidates.build import build
from evokernel_harness.candidates.load import Candidate
from evokernel_harness.tasks import load_task

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
FOLDER = os.path.join(REPO, "test", "fixtures", "robust-kbench", "linear_relu")

BACKWARD = (
    "import torch\n\n"
    "def backward(grad_output, x, weight, bias):\n"
    "    mask = (torch.addmm(bias, x, weight.t()) > 0).to(grad_output.dtype)\n"
    "    g = grad_output * mask\n"
    "    return g.mm(weight), g.t().mm(x), g.sum(0)\n"
)


def calls_as_streams_check(fn, head_start_cycles=streams.HEAD_START_CYCLES):
    for _ in range(streams.TAIL_RUNS + 1):  # the tail's runs, then the profiled call
        fn()
    return {"ok": True, "detail": "its work lies within the timed window", "streams": []}


class StreamCheckCallsTest(unittest.TestCase):
    def test_a_backward_task_is_checked_over_several_calls(self):
        task = load_task(FOLDER + "#backward")
        task.prune("cpu")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "candidate.py")
            with open(path, "w") as f:
                f.write(BACKWARD)
            cand = Candidate(path, build(path, os.path.join(tmp, "cache"))["artifact"], task)
            rec = {"ok": True, "checks": []}
            with mock.patch.object(streams, "check", calls_as_streams_check):
                rec = verdict.check_streams(rec, task, cand, 7, "cpu")
        self.assertTrue(rec["ok"], rec)
        self.assertEqual(rec["checks"][-1]["name"], "all-work-timed")


class SideStreamDiagnosisTest(unittest.TestCase):
    """A wrong output whose work escaped the caller's stream is named side-stream with the work
    the stream check saw, before the memory-reuse probe, which a late write into the
    reference's freed output fools (softmax/03c was refused as output-memory-reuse on the H100)."""

    def verifier(self, fmt):
        cand = types.SimpleNamespace(format=fmt, run=lambda case: None)
        task = types.SimpleNamespace(backward=False)
        return types.SimpleNamespace(device=torch.device("cuda"), cand=cand, task=task, escaped_work=None, checks=[])

    def classify(self, v):
        config = types.SimpleNamespace(name="8192x8192", init=None, dims={})
        failed = {"nonFinite": 0, "normRel": 1.0, "got": 0.0}
        case = types.SimpleNamespace(clone=lambda: None)
        return diagnose.classify(v, config, failed, None, 0, {}, [], case, False)

    def test_work_outside_the_timed_window_is_the_reason(self):
        escaped = {"ok": False, "detail": "0.470 ms of its GPU work ran outside the timed window", "streams": ["13"]}
        v = self.verifier("py")
        with mock.patch.object(streams, "check", lambda fn, *a: (fn(), escaped)[1]):
            self.assertEqual(self.classify(v), "side-stream")
        self.assertIn("8192x8192: 0.470 ms of its GPU work ran outside", v.escaped_work)

    def test_an_evk_candidate_is_put_to_the_same_check(self):
        # its evk_forward may launch on a stream of its own (the LLM stand-in's softmax/05 on the
        # H100, 2026-11-26: refused as unwritten-output when the probe skipped evk candidates)
        escaped = {"ok": False, "detail": "0.2 ms of its GPU work ran outside the timed window", "streams": ["13"]}
        v = self.verifier("evk")
        asked = []
        with mock.patch.object(streams, "check", lambda fn, *a: (fn(), asked.extend(a), escaped)[2]):
            self.assertEqual(self.classify(v), "side-stream")
        # with a head start longer than the host's work before the launches (allocating and
        # poisoning the outputs): on the H100 the timer's 0.5 ms let 03a's kernel start after it
        self.assertEqual(asked, [streams.PROBE_HEAD_START_CYCLES])
        self.assertGreaterEqual(streams.PROBE_HEAD_START_CYCLES, 10 * streams.HEAD_START_CYCLES)

    def test_nothing_escaped_leaves_the_other_probes_to_decide(self):
        timed = {"ok": True, "detail": "its work lies within the timed window", "streams": []}
        v = self.verifier("py")
        with (
            mock.patch.object(streams, "check", lambda fn, *a: (fn(), timed)[1]),
            mock.patch.object(diagnose, "probe_memory_reuse", return_value=True),
        ):
            self.assertEqual(self.classify(v), "output-memory-reuse")
        self.assertIsNone(v.escaped_work)
        self.assertEqual(v.checks[-1], {"name": "stream-check-on-failure", "ok": True, "detail": timed["detail"]})

    def test_a_probe_that_raises_says_so_in_the_record(self):
        # the evk side stream (softmax/03a) was named unwritten-output in verification on the
        # H100 while the stream check alone, on the same kernel, found its escaped work: the
        # record now shows what the probe met
        def broken(fn, *a):
            raise RuntimeError("profiler already enabled")

        v = self.verifier("evk")
        with mock.patch.object(streams, "check", broken), mock.patch.object(diagnose, "probe_race", return_value=True):
            self.assertEqual(self.classify(v), "race")
        self.assertEqual(v.checks[-1]["name"], "stream-check-on-failure")
        self.assertIn("raised RuntimeError: profiler already enabled", v.checks[-1]["detail"])


class TailWitnessTest(unittest.TestCase):
    """The device's tail decides only where the trace cannot speak. On the H100 (2026-11-26) the
    shape-keyed tuner's gemm_bias_relu candidates with __launch_bounds__(256, 4), the task's own
    kernel capped to 64 registers, were refused as side-stream on a 0.137 ms tail whose trace
    held every kernel inside the timed window."""

    MARKS = [(streams.MARK, 7, 0.0, 500.0), (streams.MARK, 7, 900.0, 901.0)]

    def check(self, trace, tail):
        with (
            # a trace whose head start covered the call's launches (trace_call's second value)
            mock.patch.object(streams, "trace_call", lambda fn, *a: (trace, True)),
            mock.patch.object(streams, "_least_tail", lambda fn, h, runs: tail),
        ):
            return streams.check(lambda: None)

    def test_a_trace_of_the_call_inside_the_window_decides_over_a_tail(self):
        got = self.check(self.MARKS + [("gemm_bias_relu", 7, 501.0, 880.0)], 0.137)
        self.assertTrue(got["ok"], got)
        self.assertIn("lies within the timed window", got["detail"])
        self.assertIn("stayed busy 0.137 ms", got["detail"])

    def test_without_a_trace_of_the_call_the_tail_refuses(self):
        for trace in ([], self.MARKS):  # no markers; markers but none of the call's work
            got = self.check(trace, 0.137)
            self.assertFalse(got["ok"], (trace, got))
            self.assertIn("stayed busy 0.137 ms with work it never waited for", got["detail"])
        self.assertTrue(self.check(self.MARKS, 0.01)["ok"])

    def test_work_outside_the_window_refuses_whatever_the_tail(self):
        trace = self.MARKS + [("softmax", 7, 501.0, 880.0), ("softmax", 13, 880.0, 1200.0)]
        for tail in (0.01, 0.3):
            got = self.check(trace, tail)
            self.assertFalse(got["ok"], got)
            self.assertIn("ran outside the timed window", got["detail"])
            self.assertEqual(got["streams"], ["13", "7"])


if __name__ == "__main__":
    unittest.main()
