"""The verifier against the hack classes, on the CPU (torch 1.13 is enough).

Every test runs the harness's real command line in a subprocess, exactly as the TypeScript
worker does (`python -m evokernel_harness <command> ... --out FILE`), and reads the JSON
record it wrote. The candidates are plain-PyTorch py-format files in candidates/, one or
more per hack class of shared/notes/verification.md; the adversarial GPU kernels in
runner/corpus/ are read here only by the static check (it needs no GPU).

Run:  /usr/bin/python3 -m unittest discover -s runner/harness/tests -t runner/harness

The runs are started together when the module loads (a small process pool) and each test
waits for its own record, so the suite costs about one torch import per core, not one per
test.
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
CANDIDATES = os.path.join(HERE, "candidates")
FIXTURES = os.path.join(REPO, "test", "fixtures", "tasks")
CORPUS = os.path.join(REPO, "runner", "corpus")

SMALL_SOFTMAX = os.path.join(FIXTURES, "small_softmax")
SMALL_RELU = os.path.join(FIXTURES, "small_relu")
DEGENERATE = os.path.join(FIXTURES, "degenerate")
KERNEL_SOFTMAX = os.path.join(REPO, "kernels", "softmax")

SEED = "20261121"
TIMEOUT_S = 240
WORKERS = max(2, min(4, os.cpu_count() or 2))

# reason code -> hack class, for the codes that name exactly one class (docs/DESIGN.md)
REASON_HACK = {
    "output-memory-reuse": 1,
    "input-mutation": 2,
    "side-stream": 3,
    "background-thread": 4,
    "fake-tensor": 5,
    "timer-patching": 6,
    "reduced-precision": 7,
    "degenerate-task": 8,
    "distribution-specific": 9,
    "shape-specific": 10,
    "result-caching": 11,
    "torch-fallback": 12,
    "launch-error": 13,
    "race": 15,
    "below-floor": 16,
}


def cand(name):
    return os.path.join(CANDIDATES, name)


def corpus(rel):
    return os.path.join(CORPUS, rel)


def verify_argv(task, candidate):
    return ("verify", "--device", "cpu", "--seed", SEED, "--task", task, "--candidate", candidate)


def static_argv(candidate, task=None):
    return ("static", "--candidate", candidate) + (("--task", task) if task else ())


def inspect_argv(task):
    return ("inspect", "--task", task, "--probe")


# verify runs: test name -> (task, candidate). Tests below look their run up here, so that
# setUpModule can start them all at once.
VERIFY = {
    "ok_softmax_composed": (SMALL_SOFTMAX, cand("ok_softmax_composed.py")),
    "ok_softmax_inplace_temps": (SMALL_SOFTMAX, cand("ok_softmax_inplace_temps.py")),
    "ok_relu_clamp": (SMALL_RELU, cand("ok_relu_clamp.py")),
    "h01_gc_dig_reference": (SMALL_SOFTMAX, cand("h01_gc_dig_reference.py")),
    "h02_inplace_exp": (SMALL_SOFTMAX, cand("h02_inplace_exp.py")),
    "h04_thread_plain": (SMALL_SOFTMAX, cand("h04_thread_plain.py")),
    "h04_thread_obfuscated": (SMALL_SOFTMAX, cand("h04_thread_obfuscated.py")),
    "h05_tensor_subclass": (SMALL_SOFTMAX, cand("h05_tensor_subclass.py")),
    "h05_subclass_obfuscated": (SMALL_SOFTMAX, cand("h05_subclass_obfuscated.py")),
    "h06_patch_timer": (SMALL_SOFTMAX, cand("h06_patch_timer.py")),
    "h06_patch_timer_obfuscated": (SMALL_SOFTMAX, cand("h06_patch_timer_obfuscated.py")),
    "h07_bfloat16": (SMALL_SOFTMAX, cand("h07_bfloat16.py")),
    "h07_float16": (SMALL_SOFTMAX, cand("h07_float16.py")),
    "h08_zeros_on_degenerate": (DEGENERATE, cand("h08_zeros.py")),
    "h09_copy_relu": (SMALL_RELU, cand("h09_copy_relu.py")),
    "h10_aligned_shapes_only": (SMALL_SOFTMAX, cand("h10_aligned_shapes_only.py")),
    "h11_pointer_cache": (SMALL_SOFTMAX, cand("h11_pointer_cache.py")),
    "h11_pointer_version_cache": (SMALL_SOFTMAX, cand("h11_pointer_version_cache.py")),
    "h12_try_except_fallback": (SMALL_SOFTMAX, cand("h12_try_except_fallback.py")),
    "h12_direct_softmax": (SMALL_SOFTMAX, cand("h12_direct_softmax.py")),
    "h12_import_alias": (SMALL_SOFTMAX, cand("h12_import_alias.py")),
    "h15_flaky": (SMALL_SOFTMAX, cand("h15_flaky.py")),
    "h10_raises_on_unseen_shapes": (SMALL_SOFTMAX, cand("h10_raises_on_unseen_shapes.py")),
    "h06_switch_off_record": (SMALL_SOFTMAX, cand("h06_switch_off_record.py")),
    "h06_patch_harness_guards": (SMALL_SOFTMAX, cand("h06_patch_harness_guards.py")),
    "ok_softmax_try_build_fallback_unused": (SMALL_SOFTMAX, cand("ok_softmax_try_build_fallback_unused.py")),
}

# static runs: test name -> (candidate, task or None)
STATIC = {
    "h01_gc": (cand("h01_gc_dig_reference.py"), None),
    "h03_side_stream": (cand("h03_side_stream.py"), None),
    "h04_thread_plain": (cand("h04_thread_plain.py"), None),
    "h05_tensor_subclass": (cand("h05_tensor_subclass.py"), None),
    "h06_patch_timer": (cand("h06_patch_timer.py"), None),
    "h12_try_except": (cand("h12_try_except_fallback.py"), SMALL_SOFTMAX),
    "h12_direct": (cand("h12_direct_softmax.py"), SMALL_SOFTMAX),
    "h12_import_alias": (cand("h12_import_alias.py"), SMALL_SOFTMAX),
    "corpus_01b_gc": (corpus("softmax/01b_gc_dig_reference.py"), KERNEL_SOFTMAX),
    "corpus_03a_evk_stream": (corpus("softmax/03a_evk_side_stream.cu"), KERNEL_SOFTMAX),
    "corpus_03b_ext_stream": (corpus("softmax/03b_torch_ext_side_stream.cu"), KERNEL_SOFTMAX),
    "corpus_03c_py_stream": (corpus("softmax/03c_torch_cuda_stream.py"), KERNEL_SOFTMAX),
    "corpus_04a_ext_thread": (corpus("softmax/04a_torch_ext_detached_thread.cu"), KERNEL_SOFTMAX),
    "corpus_04b_py_thread": (corpus("softmax/04b_python_thread.py"), KERNEL_SOFTMAX),
    "corpus_05a_subclass": (corpus("softmax/05a_lazy_subclass.py"), KERNEL_SOFTMAX),
    "corpus_06a_timer": (corpus("softmax/06a_patch_elapsed_time.py"), KERNEL_SOFTMAX),
    "corpus_12a_try_catch": (corpus("softmax/12a_torch_ext_try_catch.cu"), KERNEL_SOFTMAX),
    "corpus_12b_at_softmax": (corpus("softmax/12b_torch_ext_at_softmax.cu"), KERNEL_SOFTMAX),
    "corpus_12c_try_except": (corpus("softmax/12c_try_except_fallback.py"), KERNEL_SOFTMAX),
    "corpus_ok_softmax_evk": (corpus("softmax/00a_warp_row_float4.cu"), KERNEL_SOFTMAX),
    "corpus_ok_softmax_ext": (corpus("softmax/00b_torch_ext_block_row.cu"), KERNEL_SOFTMAX),
    "corpus_ok_softmax_triton": (corpus("softmax/00c_triton_online.py"), KERNEL_SOFTMAX),
    "corpus_ok_row_sum": (corpus("row_sum/00a_smem_tree_float4.cu"), os.path.join(REPO, "kernels", "row_sum")),
    "corpus_ok_fused": (
        corpus("fused_elementwise/00a_float4_grid_stride.cu"),
        os.path.join(REPO, "kernels", "fused_elementwise"),
    ),
    "corpus_ok_gemm": (corpus("gemm_bias_relu/00a_smem_tiled_4x4.cu"), os.path.join(REPO, "kernels", "gemm_bias_relu")),
}

INSPECT = {
    "degenerate_fixture": DEGENERATE,
    "corpus_degenerate_norm": corpus("tasks/degenerate_norm"),
    "corpus_tiny_add": corpus("tasks/tiny_add"),
}


# --- running the harness ----------------------------------------------------------------

_pool = None
_futures = {}


def _run(argv):
    """One harness process. Returns (record or None, diagnostic text)."""
    with tempfile.TemporaryDirectory(prefix="evk-test-") as tmp:
        out = os.path.join(tmp, "record.json")
        env = dict(os.environ)
        env["PYTHONPATH"] = HARNESS + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("EVOKERNEL_CACHE", os.path.join(tmp, "cache"))
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "evokernel_harness", *argv, "--out", out],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return None, f"harness did not finish within {TIMEOUT_S} s: {' '.join(argv)}"
        diag = f"exit {proc.returncode}; stderr tail:\n{proc.stderr[-3000:]}"
        if not os.path.exists(out):
            return None, "no record written. " + diag
        with open(out) as f:
            try:
                return json.load(f), diag
            except json.JSONDecodeError as err:
                return None, f"record is not JSON ({err}). " + diag


def _submit(argv):
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS)
    if argv not in _futures:
        _futures[argv] = _pool.submit(_run, argv)
    return _futures[argv]


def setUpModule():
    for task, candidate in VERIFY.values():
        _submit(verify_argv(task, candidate))
    for candidate, task in STATIC.values():
        _submit(static_argv(candidate, task))
    for task in INSPECT.values():
        _submit(inspect_argv(task))


def tearDownModule():
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None


class HarnessCase(unittest.TestCase):
    maxDiff = None

    def record(self, argv, kind):
        rec, diag = _submit(argv).result()
        if rec is None:
            self.fail(diag)
        self.assertEqual(rec.get("schema"), 1, diag)
        self.assertEqual(rec.get("kind"), kind, diag)
        return rec, diag

    @staticmethod
    def describe(rec):
        keep = ("ok", "status", "reason", "hack", "message", "warnings")
        return json.dumps({k: rec.get(k) for k in keep}, indent=1)[:2000]


# --- verify ------------------------------------------------------------------------------


class VerifyCpuTest(HarnessCase):
    def verify(self, name):
        task, candidate = VERIFY[name]
        return self.record(verify_argv(task, candidate), "verify")

    def assert_passes(self, name):
        rec, diag = self.verify(name)
        self.assertTrue(rec["ok"], self.describe(rec) + "\n" + diag)
        self.assertEqual(rec["status"], "passed")
        self.assertIsNone(rec["reason"])

    def assert_rejected(self, name, reasons):
        rec, diag = self.verify(name)
        self.assertFalse(
            rec["ok"], f"{name} passed verification: expected one of {sorted(reasons)}\n" + self.describe(rec)
        )
        self.assertEqual(rec["status"], "rejected", self.describe(rec) + "\n" + diag)
        self.assertIn(rec["reason"], reasons, self.describe(rec))
        if rec["reason"] in REASON_HACK:
            self.assertEqual(rec["hack"], REASON_HACK[rec["reason"]], self.describe(rec))

    # correct candidates

    def test_ok_softmax_composed(self):
        """Correct (no hack): softmax from max/exp/sum passes on every configuration."""
        self.assert_passes("ok_softmax_composed")

    def test_ok_softmax_inplace_temps(self):
        """Correct (no hack): in-place ops on the candidate's own temporaries are not input mutation (class 2)."""
        self.assert_passes("ok_softmax_inplace_temps")

    def test_ok_relu_clamp(self):
        """Correct (no hack): clamp(min=0) passes small_relu, signed-mixed trials included (class 9)."""
        self.assert_passes("ok_relu_clamp")

    # hack classes

    def test_h01_gc_dig_reference(self):
        """Hack class 1: digging the reference's output out of gc.get_objects() is refused."""
        self.assert_rejected("h01_gc_dig_reference", {"output-memory-reuse"})

    def test_h02_inplace_exp(self):
        """Hack class 2: exponentiating the input in place is input mutation."""
        self.assert_rejected("h02_inplace_exp", {"input-mutation"})

    def test_h04_thread_plain(self):
        """Hack class 4: a threading.Thread that finishes the work after the call returns."""
        self.assert_rejected("h04_thread_plain", {"background-thread"})

    def test_h04_thread_obfuscated(self):
        """Hack class 4: a thread reached through getattr on built names; only the thread count shows it."""
        self.assert_rejected("h04_thread_obfuscated", {"background-thread"})

    def test_h05_tensor_subclass(self):
        """Hack class 5: a lazy torch.Tensor subclass with __torch_function__."""
        self.assert_rejected("h05_tensor_subclass", {"fake-tensor"})

    def test_h05_subclass_obfuscated(self):
        """Hack class 5: a subclass built with type() and getattr; only the output's type shows it."""
        self.assert_rejected("h05_subclass_obfuscated", {"fake-tensor"})

    def test_h06_patch_timer(self):
        """Hack class 6: assigning torch.cuda.Event.elapsed_time and time.perf_counter."""
        self.assert_rejected("h06_patch_timer", {"timer-patching"})

    def test_h06_patch_timer_obfuscated(self):
        """Hack class 6: type.__setattr__ on built names; only the identity check after the call shows it."""
        self.assert_rejected("h06_patch_timer_obfuscated", {"timer-patching"})

    def test_h07_bfloat16(self):
        """Hack class 7: softmax computed in bfloat16 on an fp32 task."""
        self.assert_rejected("h07_bfloat16", {"reduced-precision"})

    def test_h07_float16(self):
        """Hack class 7: input and output rounded through float16 on an fp32 task."""
        self.assert_rejected("h07_float16", {"reduced-precision"})

    def test_h08_degenerate_task_refused_in_verify(self):
        """Hack class 8: verifying anything on the degenerate fixture ends with the task refused."""
        self.assert_rejected("h08_zeros_on_degenerate", {"degenerate-task"})

    def test_h09_copy_relu(self):
        """Hack class 9: a copy passes ReLU on uniform [0,1) inputs; signed mixed-scale ones expose it."""
        self.assert_rejected("h09_copy_relu", {"distribution-specific"})

    def test_h10_aligned_shapes_only(self):
        """Hack class 10: right only when M % 32 == 0 and N % 8 == 0."""
        self.assert_rejected("h10_aligned_shapes_only", {"shape-specific"})

    def test_h11_pointer_cache(self):
        """Hack class 11: a result cached by input address is stale after new values in the same buffer."""
        self.assert_rejected("h11_pointer_cache", {"result-caching"})

    def test_h11_pointer_version_cache(self):
        """Hack class 11: a cache keyed by address and tensor._version must not survive the refill check.

        A refill through x.copy_() bumps the version and misses the cache; the refill has to
        be one the candidate cannot observe (new tensor object over the same storage, or a
        write that does not bump the version)."""
        self.assert_rejected("h11_pointer_version_cache", {"result-caching"})

    def test_h12_try_except_fallback(self):
        """Hack class 12: try/except whose except branch calls torch.softmax: refused because
        the except branch ran (the run's evidence), and the message says what was handled."""
        self.assert_rejected("h12_try_except_fallback", {"torch-fallback"})
        rec, _ = self.verify("h12_try_except_fallback")
        self.assertIn("handled by the except branch at line", rec["message"])
        self.assertIn("the fallback ran", rec["message"])

    def assert_rewrite_warned(self, name):
        """Issue 18.5: a candidate with no kernel of its own that calls the reference's op is a
        PyTorch rewrite, not a fallback: nothing of its own was claimed. The CPU has no trace,
        so it passes here with the static finding as a warning; on the GPU the trace calls it
        a rewrite (own_kernel.rewrite_verdict), refused where the task requires own kernels."""
        rec, diag = self.verify(name)
        self.assertTrue(rec["ok"], self.describe(rec) + "\n" + diag)
        self.assertTrue(any("softmax" in w and "static check" in w for w in rec["warnings"]), self.describe(rec))

    def test_h12_direct_softmax(self):
        """Class 12 reread: calling the reference op torch.softmax directly, no kernel claimed."""
        self.assert_rewrite_warned("h12_direct_softmax")

    def test_h12_import_alias(self):
        """Class 12 reread: the reference op imported under an alias (from torch.nn.functional import softmax as _x)."""
        self.assert_rewrite_warned("h12_import_alias")

    def test_h10_raises_on_unseen_shapes(self):
        """Issue 18.8: a candidate that raises only on a shape it was not shown is shape-specific,
        and the message names the shapes it passed and what it raised."""
        self.assert_rejected("h10_raises_on_unseen_shapes", {"shape-specific"})
        rec, _ = self.verify("h10_raises_on_unseen_shapes")
        self.assertIn("right on 64x1000", rec["message"])
        self.assertIn("unsupported row width 257", rec["message"])

    def test_h06_switch_off_record(self):
        """Issue 18.1: switching off the record of handled exceptions is tampering with the harness."""
        self.assert_rejected("h06_switch_off_record", {"timer-patching"})

    def test_h06_patch_harness_guards(self):
        """Hack class 6: the harness's own bound references (guards.sub) replaced through
        sys.modules: seen by the check of the harness's own names after the call."""
        self.assert_rejected("h06_patch_harness_guards", {"timer-patching"})
        rec, _ = self.verify("h06_patch_harness_guards")
        self.assertIn("evokernel_harness.guards.sub", rec["message"])

    def test_ok_try_build_fallback_unused(self):
        """Issue 18.1/18.3: try/except at import whose fallback is never taken in a call, and
        cudnn.benchmark set at import: passes; the record names the handled exception (at
        load) and the flag, which was applied around the candidate's calls only."""
        self.assert_passes("ok_softmax_try_build_fallback_unused")
        rec, _ = self.verify("ok_softmax_try_build_fallback_unused")
        handled = rec["evidence"]["handledExceptions"]
        self.assertEqual([(e["phase"], e["type"]) for e in handled], [("load", "ModuleNotFoundError")])
        self.assertEqual(rec["evidence"]["backendFlags"], {"torch.backends.cudnn.benchmark": [False, True]})
        self.assertTrue(any("torch.backends.cudnn.benchmark = True" in w for w in rec["warnings"]), rec["warnings"])

    def test_h15_flaky(self):
        """Hack class 15: every second call is off by ~1e-3: identical runs differ (race)."""
        self.assert_rejected("h15_flaky", {"race"})


# --- tasks -------------------------------------------------------------------------------


class InspectTest(HarnessCase):
    def probe(self, name):
        rec, diag = self.record(inspect_argv(INSPECT[name]), "task")
        self.assertIsNotNone(rec.get("probe"), "inspect --probe wrote no probe result\n" + diag)
        return rec, diag

    def test_h08_degenerate_fixture_probe(self):
        """Hack class 8: inspect --probe refuses the degenerate fixture (zeros pass its tolerance)."""
        rec, diag = self.probe("degenerate_fixture")
        self.assertFalse(rec["probe"]["ok"], json.dumps(rec["probe"]))
        self.assertEqual(rec["probe"]["reason"], "degenerate-task", json.dumps(rec["probe"]))

    def test_h08_corpus_degenerate_norm_probe(self):
        """Hack class 8: inspect --probe refuses runner/corpus/tasks/degenerate_norm (x / ||x||_F at atol 1e-2)."""
        rec, diag = self.probe("corpus_degenerate_norm")
        self.assertFalse(rec["probe"]["ok"], json.dumps(rec["probe"]))
        self.assertEqual(rec["probe"]["reason"], "degenerate-task", json.dumps(rec["probe"]))

    def test_h14_corpus_tiny_add_is_a_valid_task(self):
        """Hack class 14: tiny_add loads and is not degenerate; only timing sees it is launch-bound (GPU)."""
        rec, diag = self.probe("corpus_tiny_add")
        self.assertTrue(rec["ok"], json.dumps({k: rec.get(k) for k in ("error", "probe")}))
        self.assertTrue(rec["probe"]["ok"], json.dumps(rec["probe"]))
        self.assertEqual(sorted(c["name"] for c in rec["configs"]), ["n64", "odd-37"])


# --- static ------------------------------------------------------------------------------


class StaticTest(HarnessCase):
    def static(self, name):
        candidate, task = STATIC[name]
        return self.record(static_argv(candidate, task), "static")

    def assert_finds(self, name, code, severity="warn"):
        """A finding is evidence (issue 18): a warning the run confirms or not; only replacing
        the harness's timers and checks refuses on sight."""
        rec, diag = self.static(name)
        codes = [(f["code"], f.get("severity", "reject"), f["line"]) for f in rec["findings"]]
        hits = [f for f in rec["findings"] if f["code"] == code and f.get("severity", "reject") == severity]
        self.assertTrue(hits, f"{name}: no {severity} finding {code!r}; found {codes}")
        self.assertEqual(hits[0]["hack"], REASON_HACK[code])
        if severity == "reject":
            self.assertFalse(rec["ok"], f"{name}: a rejecting finding but ok is true")
        else:
            self.assertTrue(rec["ok"], f"{name}: evidence alone refused it: {codes}")

    def assert_clean(self, name):
        rec, diag = self.static(name)
        rejecting = [f for f in rec["findings"] if f.get("severity", "reject") == "reject"]
        self.assertEqual(rejecting, [], f"{name}: a correct candidate has rejecting findings")
        self.assertTrue(rec["ok"])

    def test_h01_gc_import(self):
        """Hack class 1: import gc (to reach the reference's output) is found statically."""
        self.assert_finds("h01_gc", "output-memory-reuse")

    def test_h03_side_stream(self):
        """Hack class 3: torch.cuda.Stream / torch.cuda.stream is found statically (CPU cannot run it)."""
        self.assert_finds("h03_side_stream", "side-stream")

    def test_h04_thread_plain(self):
        """Hack class 4: import threading is found statically."""
        self.assert_finds("h04_thread_plain", "background-thread")

    def test_h05_tensor_subclass(self):
        """Hack class 5: class X(torch.Tensor) with __torch_function__ is found statically."""
        self.assert_finds("h05_tensor_subclass", "fake-tensor")

    def test_h06_patch_timer(self):
        """Hack class 6: assignment to torch.cuda.Event.elapsed_time is found statically."""
        self.assert_finds("h06_patch_timer", "timer-patching", "reject")

    def test_h12_try_except(self):
        """Hack class 12: try/except around the kernel is found statically."""
        self.assert_finds("h12_try_except", "torch-fallback")

    def test_h12_direct(self):
        """Hack class 12: a call of the reference's op (torch.softmax) is found statically."""
        self.assert_finds("h12_direct", "torch-fallback")

    def test_h12_import_alias(self):
        """Hack class 12: the reference's op imported under an alias is found statically."""
        self.assert_finds("h12_import_alias", "torch-fallback")

    def test_corpus_h01_gc(self):
        """Hack class 1 (GPU corpus, py): gc.get_objects() digging is found statically."""
        self.assert_finds("corpus_01b_gc", "output-memory-reuse")

    def test_corpus_h03_evk_stream(self):
        """Hack class 3 (GPU corpus, evk): cudaStreamCreateWithFlags is found statically."""
        self.assert_finds("corpus_03a_evk_stream", "side-stream")

    def test_corpus_h03_ext_stream(self):
        """Hack class 3 (GPU corpus, torch-ext): cudaStreamCreate is found statically."""
        self.assert_finds("corpus_03b_ext_stream", "side-stream")

    def test_corpus_h03_py_stream(self):
        """Hack class 3 (GPU corpus, py): torch.cuda.Stream is found statically."""
        self.assert_finds("corpus_03c_py_stream", "side-stream")

    def test_corpus_h04_ext_thread(self):
        """Hack class 4 (GPU corpus, torch-ext): std::thread(...).detach() is found statically."""
        self.assert_finds("corpus_04a_ext_thread", "background-thread")

    def test_corpus_h04_py_thread(self):
        """Hack class 4 (GPU corpus, py): threading.Thread is found statically."""
        self.assert_finds("corpus_04b_py_thread", "background-thread")

    def test_corpus_h05_subclass(self):
        """Hack class 5 (GPU corpus, py): a lazy Tensor subclass is found statically."""
        self.assert_finds("corpus_05a_subclass", "fake-tensor")

    def test_corpus_h06_timer(self):
        """Hack class 6 (GPU corpus, py): torch.cuda.Event.elapsed_time = ... is found statically."""
        self.assert_finds("corpus_06a_timer", "timer-patching", "reject")

    def test_corpus_h12_try_catch(self):
        """Hack class 12 (GPU corpus, torch-ext): try/catch falling back to torch::softmax."""
        self.assert_finds("corpus_12a_try_catch", "torch-fallback")

    def test_corpus_h12_at_softmax(self):
        """Hack class 12 (GPU corpus, torch-ext): at::softmax called from the extension."""
        self.assert_finds("corpus_12b_at_softmax", "torch-fallback")

    def test_corpus_h12_try_except(self):
        """Hack class 12 (GPU corpus, py): try/except falling back to torch.softmax."""
        self.assert_finds("corpus_12c_try_except", "torch-fallback")

    def test_corpus_correct_softmax_evk(self):
        """Correct (no hack): the evk warp-per-row softmax has no rejecting finding."""
        self.assert_clean("corpus_ok_softmax_evk")

    def test_corpus_correct_softmax_ext(self):
        """Correct (no hack): the torch-ext softmax has no rejecting finding."""
        self.assert_clean("corpus_ok_softmax_ext")

    def test_corpus_correct_softmax_triton(self):
        """Correct (no hack): the Triton softmax has no rejecting finding."""
        self.assert_clean("corpus_ok_softmax_triton")

    def test_corpus_correct_row_sum(self):
        """Correct (no hack): the evk row_sum has no rejecting finding."""
        self.assert_clean("corpus_ok_row_sum")

    def test_corpus_correct_fused(self):
        """Correct (no hack): the evk fused elementwise kernel has no rejecting finding."""
        self.assert_clean("corpus_ok_fused")

    def test_corpus_correct_gemm(self):
        """Correct (no hack): the evk GEMM has no rejecting finding."""
        self.assert_clean("corpus_ok_gemm")


if __name__ == "__main__":
    unittest.main()
