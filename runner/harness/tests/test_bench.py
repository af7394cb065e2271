"""bench() on the CPU: the whole run (probe, inputs, cost, timing, the checks after timing, the
profile, the summary) with the GPU's clock modelled as in test_timing_head_start (events,
synchronise and the host clock faked; the baseline and the candidate take 0.3 and 0.2 ms of
modelled GPU time a call) and the profiler's three uses stubbed (the reference's launched
time, the stream check, the kernel list). What each check decides is held here: bench()
needs CUDA, so no other test of the suite runs it."""

import contextlib
import os
import tempfile
import types
import unittest
from unittest import mock

import torch

from evokernel_harness import bench, guards, timing
from evokernel_harness.candidates.build import build
from evokernel_harness.candidates.load import Candidate
from evokernel_harness.probe_cache import ProbeCache
from evokernel_harness.tasks import load_task, select_configs
from tests import test_timing_head_start as head

HERE = os.path.dirname(os.path.abspath(__file__))

REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TASK = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")  # configurations 64x1000, odd-33x257
HONEST = os.path.join(TASK, "candidate_ok.py")
CACHING = os.path.join(HERE, "candidates", "h11_pointer_cache.py")
NO_FLOOR = {"bandwidthGBs": 1e30, "fp32Tflops": 1e30, "bf16Tflops": 1e30}  # any time is above it
PROBE_MS = {"64x1000": 0.5, "odd-33x257": 0.01}  # the second is launch-bound (under 20 µs)


class CpuModel(unittest.TestCase):
    """The GPU modelled on the CPU (also test_bench_judge's): bench() runs in it."""

    def setUp(self):
        self.stream = stream = head.Stream()
        event_base = mock.Mock()
        event_base.record = stream.record
        event_base.elapsed_time = lambda a, b: b.at - a.at
        on_cpu = types.SimpleNamespace(**{k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
        on_cpu.device = lambda name: torch.device("cpu")
        on_cpu.cuda = types.SimpleNamespace(synchronize=lambda *a: None)
        self.streamed = {"ok": True, "detail": ""}
        probes = []

        def launched(fn):
            fn()
            probes.append(fn)
            return PROBE_MS[self.config_names[(len(probes) - 1) % len(self.config_names)]]

        patches = [
            mock.patch.object(timing, "Event", head.FakeEvent),
            mock.patch.object(timing, "sleep", stream.sleep),
            mock.patch.object(guards, "EventBase", event_base),
            mock.patch.object(guards, "synchronize", stream.synchronize),
            mock.patch.object(guards, "perf_counter", stream.perf_counter),
            mock.patch.object(guards, "tampered", lambda: []),  # the fakes above replaced the timer
            mock.patch.object(torch.cuda, "current_stream", lambda: None),
            mock.patch.object(bench, "torch", on_cpu),
            mock.patch.object(bench, "Timer", lambda device, l2, hs: head.fake_timer(stream, hs)),
            mock.patch.object(bench, "launched_kernel_time_ms", launched),
            mock.patch.object(bench, "top_kernels", lambda fn: (fn(), [{"name": "k", "us": 1.0, "calls": 1}])[1]),
            mock.patch.object(bench, "stream_check", lambda fn: (fn(), self.streamed)[1]),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        self.cache = tempfile.mkdtemp()
        self.task = load_task(TASK)
        self.task.prune("cpu")
        self.config_names = [c.name for c in self.task.visible_configs()]

    def candidate(self, path, gpu_ms):
        built = build(path, self.cache)
        cand = Candidate(path, built["artifact"], self.task)
        run = cand.run
        cand.run = lambda case: (self.stream.launch(0.01, gpu_ms), run(case))[1]
        return cand


def _both(*patches):
    stack = contextlib.ExitStack()
    for p in patches:
        stack.enter_context(p)
    return stack


class BenchCpuTest(CpuModel):
    def bench(self, candidate=HONEST, ceilings=NO_FLOOR, **kw):
        cand = self.candidate(candidate, 0.2)
        base = self.candidate(HONEST, 0.3)
        return bench.bench(
            self.task,
            cand,
            base,
            ceilings,
            {"name": "cpu", "l2Bytes": None},
            1234,
            log=lambda _: None,
            budget_s=0.05,
            **kw,
        )

    def test_an_honest_candidate_is_timed_on_every_configuration(self):
        rec = self.bench()
        self.assertEqual((rec["ok"], rec["reason"], rec["message"]), (True, None, "timed"))
        self.assertEqual([r["name"] for r in rec["configs"]], self.config_names)
        self.assertEqual([r["launchBound"] for r in rec["configs"]], [False, True])
        first = rec["configs"][0]
        self.assertAlmostEqual(first["candidate"]["medianMs"], 0.2, places=6)
        self.assertAlmostEqual(first["baseline"]["medianMs"], 0.3, places=6)
        self.assertEqual(rec["profile"]["config"], "64x1000")
        self.assertTrue(any("odd-33x257: launch-bound" in n for n in rec["notes"]))
        self.assertEqual(
            set(rec["phases"]), {"start", "probe", "inputs", "cost", "compile", "timing", "checks", "profiler"}
        )

    def test_a_selected_configuration_is_timed_on_the_inputs_of_the_full_run(self):
        # issue 36.1: `bench --seed N --config C` reproduces C's timing of a run of them all
        seeds = []
        make_case = self.task.make_case

        def recording(config, seed, device, **kw):
            seeds.append((config.name, seed))
            return make_case(config, seed, device, **kw)

        with mock.patch.object(self.task, "make_case", recording):
            self.bench()
            full = [s for s in seeds if s[0] == "odd-33x257"]
            seeds.clear()
            select_configs(self.task, ["odd-33x257"])
            self.config_names = ["odd-33x257"]
            rec = self.bench()
        self.assertEqual([r["name"] for r in rec["configs"]], ["odd-33x257"])
        self.assertTrue(full)
        self.assertEqual([s for s in seeds if s[0] == "odd-33x257"], full)

    def test_a_cached_result_is_wrong_after_timing(self):
        rec = self.bench(candidate=CACHING)
        self.assertEqual(rec["reason"], "timing-output-mismatch")
        self.assertIsNone(rec["profile"])

    def test_a_time_under_the_floor_is_refused(self):
        slow_machine = {"bandwidthGBs": 1e-3, "fp32Tflops": 1e-6, "bf16Tflops": 1e-6}
        rec = self.bench(ceilings=slow_machine)
        self.assertEqual([r["reason"] for r in rec["configs"]], ["below-floor", "below-floor"])
        self.assertIn("(configuration 64x1000)", rec["message"])

    def test_work_outside_the_timed_stream_is_refused_with_the_checks_words(self):
        self.streamed = {"ok": False, "detail": "a kernel ran on stream 7 after the end marker"}
        rec = self.bench()
        self.assertEqual(rec["reason"], "side-stream")
        self.assertEqual(rec["message"], "configuration 64x1000: a kernel ran on stream 7 after the end marker")

    def slow_host(self):
        """The synchronise after each of the candidate's calls returns 1 ms late (its thread
        descheduled on a busy machine, after the end event was recorded): the wall clock far
        above the event time, with no work escaped."""
        sync, late = self.stream.synchronize, []

        def synchronize():
            sync()
            if late:
                late.clear()
                self.stream.host += 1.0

        plain = self.candidate

        def candidate(path, gpu_ms):
            cand = plain(path, gpu_ms)
            run = cand.run
            cand.run = (lambda case: (run(case), late.append(1))[0]) if gpu_ms == 0.2 else run
            return cand

        return _both(
            mock.patch.object(guards, "synchronize", synchronize), mock.patch.object(self, "candidate", candidate)
        )

    def test_a_wall_clock_far_above_the_events_is_the_traces_to_decide(self):
        # on the H100 (2026-11-26) an honest softmax template was refused as side-stream on the
        # wall clock alone while torch.compile's workers and builds held every core
        self.streamed = {"ok": True, "detail": "its work lies within the timed window", "streams": [], "traced": True}
        with self.slow_host():
            rec = self.bench()
        self.assertEqual((rec["ok"], rec["reason"]), (True, None), rec["message"])
        self.assertTrue(any("(the host's clock), and the trace of a call saw all its work" in n for n in rec["notes"]))
        # where no trace can speak, the wall clock refuses as before
        self.streamed = {"ok": True, "detail": "no GPU activity seen; stream check inconclusive", "streams": []}
        with self.slow_host():
            rec = self.bench()
        self.assertEqual(rec["reason"], "side-stream")

    def test_a_candidate_slower_than_the_leader_is_raced_out_after_one_configuration(self):
        # every kernel to beat at the floor: nothing the rest could give makes up for the first
        everywhere = {name: 1.0 for name in self.config_names}
        rec = self.bench(
            race={name: 100.0 for name in self.config_names},
            race_ceilings=everywhere,
            adaptive=True,
            time_eager=False,
        )
        self.assertTrue(rec["ok"])
        self.assertEqual([r["name"] for r in rec["configs"]], ["64x1000"])
        self.assertEqual(rec["race"]["config"], "64x1000")
        self.assertTrue(rec["message"].startswith("raced out after 64x1000"))
        self.assertIsNone(rec["configs"][0]["eager"])
        # without the ceilings no configuration still to come is bounded: every one is timed
        rec = self.bench(race={name: 100.0 for name in self.config_names}, adaptive=True, time_eager=False)
        self.assertIsNone(rec["race"])
        self.assertEqual([r["name"] for r in rec["configs"]], self.config_names)

    def test_a_derived_launch_bound_configuration_is_not_timed(self):
        for config in self.task.configs:
            config.derived = True
        rec = self.bench()
        self.assertEqual([r["name"] for r in rec["configs"]], ["64x1000"])
        self.assertTrue(any(n.startswith("odd-33x257: not timed") for n in rec["notes"]))

    def test_the_probe_cache_answers_a_second_run(self):
        folder = os.path.join(self.cache, "probe")
        self.bench(probe_cache=ProbeCache(folder))
        rec = self.bench(probe_cache=ProbeCache(folder))
        self.assertEqual(rec["probeCache"], {"hits": 2, "misses": 0, "costHits": 2, "costMisses": 0})
        self.assertEqual([r["eagerDeviceMs"] for r in rec["configs"]], [0.5, 0.01])


class PrivateCompileCachesTest(unittest.TestCase):
    """torch.compile's caches are the timing process's own: inductor imports generated Python
    from its cache folder by hash, and the build cache's folders are written by candidates, so
    a planted file would run in the judge."""

    def test_torch_compile_never_reads_the_shared_cache(self):
        shared = tempfile.mkdtemp(prefix="evk-shared-cache-")
        names = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
        with mock.patch.dict(os.environ, {n: os.path.join(shared, n) for n in names}):
            task = types.SimpleNamespace(reference_entry=lambda: lambda x: x, invoke=lambda f, c: f(c))
            bench._compiled(task, lambda line: None)
            for name in names:
                self.assertFalse(os.environ[name].startswith(shared), name)
                self.assertTrue(os.environ[name].startswith(tempfile.gettempdir()), name)
            first = os.environ["TORCHINDUCTOR_CACHE_DIR"]
            bench._compiled(task, lambda line: None)
            self.assertNotEqual(os.environ["TORCHINDUCTOR_CACHE_DIR"], first)  # a new folder each time


if __name__ == "__main__":
    unittest.main()
