"""Where a harness child's seconds go (phases that never overlap, in verify records too), and
the cache of bench's reference probe: its key, hits and misses, corrupt entries, its bound.
CPU only: the probe itself (a profiler run on the GPU) is a stand-in here."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from evokernel_harness import probe_cache
from evokernel_harness.phases import Phases
from evokernel_harness.probe_cache import ProbeCache, probe_key, task_digest
from evokernel_harness.tasks import load_task

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
KB_SOFTMAX = os.path.join(REPO, "test", "fixtures", "kernelbench", "23_Softmax.py")
H100 = {"name": "NVIDIA H100 80GB HBM3", "driver": "550.54", "cuda": "12.4", "torch": "2.5.1"}


def clock(*times):
    it = iter(times)
    return mock.patch("evokernel_harness.phases.time.perf_counter", lambda: next(it))


class PhasesTest(unittest.TestCase):
    def test_a_part_is_taken_out_of_the_lap_around_it(self):
        # 0 start; 1 part a begins; 3 it ends; 4 lap checks; 6 lap timing
        with clock(0.0, 1.0, 3.0, 4.0, 6.0):
            p = Phases()
            with p.part("reference"):
                pass
            p.lap("checks")
            p.lap("timing")
        self.assertEqual(p.seconds, {"reference": 2.0, "checks": 2.0, "timing": 2.0})

    def test_nested_parts_do_not_overlap(self):
        # 0 start; 1 outer; 2 inner; 5 inner ends; 6 outer ends; 7 lap rest
        with clock(0.0, 1.0, 2.0, 5.0, 6.0, 7.0):
            p = Phases()
            with p.part("inputs"):
                with p.part("reference"):
                    pass
            p.lap("rest")
        self.assertEqual(p.seconds, {"inputs": 2.0, "reference": 3.0, "rest": 2.0})
        self.assertEqual(sum(p.seconds.values()), 7.0)

    def test_a_part_that_raises_is_still_charged(self):
        with clock(0.0, 1.0, 4.0, 4.5):
            p = Phases()
            with self.assertRaises(ValueError):
                with p.part("candidate"):
                    raise ValueError("the candidate raised")
            p.lap("checks")
        self.assertEqual(p.seconds, {"candidate": 3.0, "checks": 1.5})

    def test_sums_are_rounded_only_when_read(self):
        times = [0.0] + [i * 1e-5 for i in range(1, 2001)]
        with clock(*times):
            p = Phases()
            for _ in range(1000):
                with p.part("candidate"):
                    pass
        self.assertAlmostEqual(p.seconds["candidate"], 0.01, places=6)


class ProbeKeyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.task_dir = os.path.join(self.tmp, "small_softmax")
        shutil.copytree(SMALL_SOFTMAX, self.task_dir)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def key(self, task=None, config=0, device=H100):
        task = task or load_task(self.task_dir)
        return probe_key(task_digest(task), task, task.configs[config], device)

    def test_same_task_same_key_across_loads(self):
        self.assertEqual(self.key(), self.key())

    def test_the_key_changes_with_what_the_probe_depends_on(self):
        base = self.key()
        self.assertNotEqual(base, self.key(config=1), "another configuration")
        for field, value in (("name", "NVIDIA H200"), ("torch", "2.6.0"), ("driver", "560.1"), ("cuda", "12.6")):
            self.assertNotEqual(base, self.key(device={**H100, field: value}), field)
        task = load_task(self.task_dir)
        task.configs[0].dims = {**task.configs[0].dims, "N": task.configs[0].dims["N"] + 1}
        self.assertNotEqual(base, self.key(task=task), "other dims under the same name")

    def test_the_key_changes_with_the_task_files(self):
        base = self.key()
        with open(os.path.join(self.task_dir, "task.json")) as f:
            spec = json.load(f)
        with open(os.path.join(self.task_dir, spec["reference"]), "a") as f:
            f.write("\n# edited\n")
        self.assertNotEqual(base, self.key(), "the reference's source")
        edited = self.key()
        spec["tolerance"] = {"float32": {"atol": 1e-4, "rtol": 1e-4, "norm": 1e-4}}
        with open(os.path.join(self.task_dir, "task.json"), "w") as f:
            json.dump(spec, f)
        self.assertNotEqual(edited, self.key(), "the task's spec")

    def test_a_kernelbench_file_is_hashed_by_its_content(self):
        task = load_task(KB_SOFTMAX)
        self.assertEqual(probe_cache.task_files(task), [os.path.abspath(KB_SOFTMAX)])
        self.assertEqual(len(task_digest(task)), 64)


class ProbeCacheTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.folder = os.path.join(self.tmp, "probe")
        self.calls = 0

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def measure(self, value=0.0123):
        def run():
            self.calls += 1
            return value

        return run

    def test_a_miss_measures_and_stores_then_hits_across_processes(self):
        first = ProbeCache(self.folder)
        self.assertEqual(first.probe("k" * 64, self.measure()), (0.0123, False))
        again = ProbeCache(self.folder)  # the next bench child
        self.assertEqual(again.probe("k" * 64, self.measure(99.0)), (0.0123, True))
        self.assertEqual(self.calls, 1)
        self.assertEqual((first.hits, first.misses, again.hits, again.misses), (0, 1, 1, 0))

    def test_other_keys_are_other_entries(self):
        cache = ProbeCache(self.folder)
        cache.probe("a" * 64, self.measure(1.0))
        self.assertEqual(cache.probe("b" * 64, self.measure(2.0)), (2.0, False))
        self.assertEqual(cache.probe("a" * 64, self.measure(3.0)), (1.0, True))

    def test_no_time_is_never_stored(self):
        """A profiler that is missing (None) is asked again next time, never remembered."""
        cache = ProbeCache(self.folder)
        for _ in range(2):
            self.assertEqual(cache.probe("k" * 64, self.measure(None)), (None, False))
        self.assertEqual(self.calls, 2)

    def test_a_corrupt_entry_is_a_miss_and_is_replaced(self):
        cache = ProbeCache(self.folder)
        key = "c" * 64
        cache.probe(key, self.measure(0.5))
        path = cache._file(key)
        for bad in (
            "{not json",
            "[]",
            json.dumps({"key": key, "deviceMs": -1}),
            json.dumps({"key": key, "deviceMs": "1"}),
            json.dumps({"key": "d" * 64, "deviceMs": 0.5}),
            json.dumps({"key": key, "deviceMs": True}),
            "",
        ):
            with self.subTest(bad=bad):
                with open(path, "w") as f:
                    f.write(bad)
                self.assertEqual(cache.probe(key, self.measure(0.7)), (0.7, False))
                self.assertEqual(cache.get(key), 0.7)

    def test_an_unwritable_cache_is_no_failure(self):
        blocked = os.path.join(self.tmp, "file")
        open(blocked, "w").close()
        cache = ProbeCache(os.path.join(blocked, "probe"))  # a folder under a file: cannot exist
        self.assertEqual(cache.probe("k" * 64, self.measure(0.2)), (0.2, False))
        self.assertEqual(cache.probe("k" * 64, self.measure(0.3)), (0.3, False))

    def test_bounded_oldest_go_first(self):
        cache = ProbeCache(self.folder, max_entries=3)
        for i in range(5):
            key = f"{i}" * 64
            cache.put(key, 1.0 + i)
            os.utime(cache._file(key), (1000 + i, 1000 + i))
        names = sorted(os.listdir(self.folder))
        self.assertEqual(len(names), 3)
        self.assertIsNone(cache.get("0" * 64))
        self.assertIsNone(cache.get("1" * 64))
        self.assertEqual(cache.get("4" * 64), 5.0)
        for name in names:
            self.assertLess(os.path.getsize(os.path.join(self.folder, name)), 1024)


class CostCacheTest(unittest.TestCase):
    """A configuration's roofline cost (bytes, flops) is cached beside its probe: the flop
    count runs torch's FlopCounterMode, seconds on its first use in a process."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.folder = os.path.join(self.tmp, "probe")
        self.calls = 0

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def compute(self, value=(4096, 1000)):
        def run():
            self.calls += 1
            return value

        return run

    def test_a_miss_computes_and_stores_then_hits_across_processes(self):
        key = "k" * 64
        first = ProbeCache(self.folder)
        self.assertEqual(first.cost(key, self.compute()), ((4096, 1000), False))
        again = ProbeCache(self.folder)
        self.assertEqual(again.cost(key, self.compute((1, 1))), ((4096, 1000), True))
        self.assertEqual(self.calls, 1)
        self.assertEqual((again.cost_hits, again.cost_misses, again.hits, again.misses), (1, 0, 0, 0))

    def test_the_cost_and_the_probe_of_one_key_are_separate_entries(self):
        key = "k" * 64
        cache = ProbeCache(self.folder)
        cache.probe(key, lambda: 0.5)
        self.assertIsNone(cache.get_cost(key))
        cache.cost(key, self.compute((8, 0)))
        self.assertEqual(cache.get(key), 0.5)
        self.assertEqual(cache.get_cost(key), (8, 0))
        self.assertEqual(len(os.listdir(self.folder)), 2)

    def test_a_corrupt_or_implausible_cost_is_a_miss(self):
        key = "c" * 64
        cache = ProbeCache(self.folder)
        cache.cost(key, self.compute())
        path = cache._file(probe_cache.cost_key(key))
        for bad in (
            "{not json",
            json.dumps({"key": probe_cache.cost_key(key), "bytes": 0, "flops": 1}),
            json.dumps({"key": probe_cache.cost_key(key), "bytes": 10, "flops": -1}),
            json.dumps({"key": probe_cache.cost_key(key), "bytes": 10.5, "flops": 1}),
            json.dumps({"key": probe_cache.cost_key(key), "bytes": True, "flops": 1}),
            json.dumps({"key": key, "bytes": 10, "flops": 1}),
        ):
            with self.subTest(bad=bad):
                with open(path, "w") as f:
                    f.write(bad)
                self.assertEqual(cache.cost(key, self.compute((16, 2))), ((16, 2), False))
                self.assertEqual(cache.get_cost(key), (16, 2))

    def test_a_native_task_that_declares_its_flops_runs_no_flop_counter(self):
        from evokernel_harness.tasks.base import Config

        task = load_task(os.path.join(REPO, "kernels", "gemm_bias_relu"))
        config = Config(name="tiny", dims={**task.configs[0].dims, "M": 8, "N": 8, "K": 8})
        case = task.make_case(config, 1, "cpu")
        out = task.invoke(task.reference_entry(), case.clone())
        with mock.patch("evokernel_harness.tasks.base.count_flops", side_effect=AssertionError("counted")):
            nbytes, flops = task.cost(config, case, out)
        self.assertEqual(flops, 2 * 8 * 8 * 8)
        self.assertEqual(
            nbytes,
            sum(t.numel() * t.element_size() for _, t in case.tensors())
            + sum(t.numel() * t.element_size() for t in out),
        )


class VerifyPhasesTest(unittest.TestCase):
    def test_a_verify_record_says_where_its_seconds_went(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "record.json")
            env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "runner", "harness")}
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "evokernel_harness",
                    "verify",
                    "--device",
                    "cpu",
                    "--seed",
                    "7",
                    "--task",
                    SMALL_SOFTMAX,
                    "--candidate",
                    os.path.join(HERE, "candidates", "ok_softmax_composed.py"),
                    "--out",
                    out,
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=1800,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            with open(out) as f:
                rec = json.load(f)
        self.assertTrue(rec["ok"], rec["message"])
        phases = rec["phases"]
        # dump: the candidate's process writing its outputs for the judge; recheck: the judge's
        # own comparison, after the candidate's process ended (judge.py)
        self.assertEqual(
            set(phases), {"start", "load", "inputs", "reference", "candidate", "checks", "dump", "recheck"}
        )
        self.assertTrue(all(v >= 0 for v in phases.values()), phases)
        self.assertGreater(phases["candidate"], 0)
        self.assertGreater(phases["reference"], 0)
        # the verifier's phases add up to its own seconds (rounding aside)
        inside = sum(v for k, v in phases.items() if k not in ("start", "load", "recheck"))
        self.assertAlmostEqual(inside, rec["seconds"]["verify"], delta=0.01 + 0.01 * rec["seconds"]["verify"])


if __name__ == "__main__":
    unittest.main()
