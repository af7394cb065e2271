"""bench --warm-compile (the reference alone, timed beside a search) and the judge's own bench
time the reference the same way: one helper, half the budget, the ceilings measured (never read
from the build cache), the probe cache's measuring kind. The GPU is stood in for: what is
checked is what each command asks of bench() and in which order it takes the GPU's lock."""

import contextlib
import os
import tempfile
import unittest
from unittest import mock

import torch

from evokernel_harness import bench as bench_module
from evokernel_harness import env, gpulock, roofline
from evokernel_harness.commands import bench as command
from evokernel_harness.options import parse_request as parse
from evokernel_harness.probe_cache import CostMeasured

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
TASK = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
CEILINGS = {"device": "Fake GPU", "bandwidthGBs": 3000.0, "fp32Tflops": 50.0, "bf16Tflops": 700.0}


class ReferenceAloneTest(unittest.TestCase):
    def setUp(self):
        self.events = []
        self.cache = tempfile.mkdtemp()

        def fake_bench(task, candidate, baseline, ceilings, info, seed, **kw):
            self.events.append(("bench", candidate, baseline, kw))
            return {"ok": True, "reason": None, "message": "timed", "configs": [], "notes": [], "phases": {}}

        def measured(name):
            self.events.append(("ceilings", name))
            return CEILINGS

        def warm(task, seed, log, seconds=None):
            self.events.append(("warm", os.environ.get(gpulock.HELD)))
            if seconds is not None:
                seconds["first-config"] = 0.5  # its first call, as warm_compiled times it
            return "compiled"

        @contextlib.contextmanager
        def lock(gpu_work=True, on_wait=None):
            self.events.append(("lock",))
            yield 0.25
            self.events.append(("unlock",))

        for p in (
            mock.patch.object(torch.cuda, "is_available", lambda: True),
            mock.patch.object(env, "device_info", lambda kind: {"name": "Fake GPU"}),
            mock.patch.object(env, "precise_math", lambda: None),
            mock.patch.object(roofline, "measure_ceilings", measured),
            mock.patch.object(bench_module, "bench", fake_bench),
            mock.patch.object(bench_module, "warm_compiled", warm),
            mock.patch.object(gpulock, "held_for_gpu_work", lock),
        ):
            p.start()
            self.addCleanup(p.stop)

    def args(self, *extra):
        return parse(["bench", "--task", TASK, "--cache", self.cache, "--budget", "1.5", *extra])

    def test_warm_compile_compiles_before_the_lock_and_times_as_the_judge_does(self):
        rec = command.cmd_bench(self.args("--no-baseline", "--warm-compile", "--seed", "5"))
        kinds = [e[0] for e in self.events]
        self.assertEqual(kinds, ["warm", "lock", "ceilings", "bench", "unlock"])
        _, candidate, baseline, kw = self.events[3]
        self.assertEqual((candidate, baseline), (None, None))
        self.assertEqual(kw["budget_s"], 0.75)
        self.assertEqual(kw["compiled"], "compiled")
        self.assertTrue(kw["compile_baseline"])
        self.assertIsInstance(kw["probe_cache"], CostMeasured)
        self.assertEqual((rec["kind"], rec["ceilings"], rec["seed"]), ("bench", CEILINGS, 5))
        self.assertEqual(rec["phases"]["lock"], 0.25)
        self.assertIn("warm-compile", rec["phases"])
        # where the warm-up went: the imports, each configuration's first call, the rest
        self.assertIn("imports", rec["phases"])
        self.assertEqual(rec["phases"]["compile first-config"], 0.5)

    def test_the_judge_times_the_reference_with_the_same_helper(self):
        own, judging = command._judge_side(self.args("--seed", "5"), 5)
        self.assertIsNotNone(judging)
        self.assertEqual([e[0] for e in self.events], ["ceilings", "bench"])
        _, candidate, baseline, kw = self.events[1]
        self.assertEqual((candidate, baseline, kw["budget_s"], kw["compiled"]), (None, None, 0.75, None))
        self.assertIsInstance(kw["probe_cache"], CostMeasured)
        self.assertEqual(own["ceilings"], CEILINGS)


if __name__ == "__main__":
    unittest.main()
