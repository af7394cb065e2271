"""Issue 18: static findings are evidence, the run decides.

What the candidate did when it ran: the exceptions its own code raised and handled
(evidence.py: sys.settrace before Python 3.12, sys.monitoring from 3.12, each tested where
that Python is at hand), the backend flags it set (backend_flags.py: applied around its calls
only), whose kernels did the work (own_kernel.judge, rewrite_verdict) and the verdict drawn
from them (verdict.py). The end-to-end runs are in test_verify_hacks.py and
test_honest_idioms_cpu.py.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
from unittest import mock

import torch

from evokernel_harness import backend_flags, evidence, own_kernel, static_check, streams, verdict
from evokernel_harness.pyload import load_module

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)

CANDIDATE = textwrap.dedent(
    """
    def optional():
        try:
            import a_module_that_is_not_there  # noqa: F401
        except ImportError:
            return "fallback"
        return "fast"


    def cached(table, key):
        try:
            return table[key]
        except KeyError:
            table[key] = key * 2
            return table[key]


    def unhandled():
        raise ValueError("not handled here")
"""
)

BUILD_LOG = (
    "Error building extension 'softmax_ext': [1/3] c++ -MMD -MF main.o.d ... -c main.cpp -o main.o\n"
    "FAILED: main.o\n"
    "main.cpp:4:50: error: 'forward' was not declared in this scope\n"
    '    4 | m.def("forward", torch::wrap_pybind_function(forward), "forward");\n'
    "ninja: build stopped: subcommand failed.\n"
)


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class HandledExceptionsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.path = write(self.tmp, "cand.py", CANDIDATE)
        self.rec = evidence.watch(self.path)
        with evidence.scope():
            self.mod = load_module(self.path, f"evk_test_evidence_{abs(hash(self.path))}")
        self.rec.phase = "verify"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_an_except_branch_that_ran_is_recorded_with_its_line_and_count(self):
        with evidence.scope():
            self.assertEqual(self.mod.optional(), "fallback")
            self.assertEqual(self.mod.optional(), "fallback")
        handled = self.rec.handled(("verify",))
        self.assertEqual(len(handled), 1, handled)
        self.assertEqual(handled[0]["type"], "ModuleNotFoundError")
        self.assertEqual(handled[0]["count"], 2)
        self.assertEqual(handled[0]["line"], 5)  # the except line of CANDIDATE
        self.assertIn("handled by the except branch at line 5", evidence.summary(handled)[0])

    def test_an_exception_that_propagates_is_not_a_handled_one(self):
        with evidence.scope():
            with self.assertRaises(ValueError):
                self.mod.unhandled()
        self.assertEqual(self.rec.handled(("verify",)), [])

    def test_exceptions_handled_outside_candidate_code_are_not_its_own(self):
        with evidence.scope():
            try:
                raise KeyError("harness")
            except KeyError:
                pass
        self.assertEqual(self.rec.handled(), [])

    def test_phases_are_kept_apart(self):
        self.rec.phase = "bench"
        with evidence.scope():
            self.mod.cached({}, 3)
        self.assertEqual([e["phase"] for e in self.rec.handled()], ["bench"])
        self.assertEqual(self.rec.handled(("verify",)), [])

    def test_a_failed_extension_build_is_told_in_the_compilers_words(self):
        text = evidence.describe(RuntimeError(BUILD_LOG))
        self.assertIn("Error building extension", text)
        self.assertIn("'forward' was not declared in this scope", text)
        self.assertNotIn("ninja: build stopped", text)
        words = evidence.summary([{"phase": "load", "line": 12, "type": "RuntimeError", "message": text, "count": 1}])
        self.assertTrue(words[0].startswith("the extension build failed"), words)

    def test_the_record_stays_on_while_the_candidate_runs(self):
        with evidence.scope():
            self.assertTrue(self.rec.active())

    @unittest.skipIf(hasattr(sys, "monitoring"), "sys.settrace is the record before Python 3.12 only")
    def test_switching_the_trace_off_shows(self):
        with evidence.scope():
            sys.settrace(None)
            self.assertFalse(self.rec.active())


def python312():
    for name in ("python3.13", "python3.12"):
        found = shutil.which(name)
        if (
            found
            and subprocess.run(
                [found, "-c", "import sys; assert sys.version_info >= (3, 12)"], capture_output=True
            ).returncode
            == 0
        ):
            return found
    for found in ("/root/.pyenv/versions/3.12.1/bin/python3", "/opt/torch/.venv/bin/python"):
        if os.path.exists(found):
            return found
    return None


MONITORING_SCRIPT = textwrap.dedent(
    """
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("ev", sys.argv[1])
    ev = importlib.util.module_from_spec(spec); spec.loader.exec_module(ev)
    rec = ev.watch(sys.argv[2])
    spec = importlib.util.spec_from_file_location("cand", sys.argv[2])
    cand = importlib.util.module_from_spec(spec)
    with ev.scope():
        spec.loader.exec_module(cand)
    rec.phase = "verify"
    with ev.scope():
        cand.optional(); cand.optional(); cand.cached({}, 1)
        try:
            cand.unhandled()
        except ValueError:
            pass
    active = rec.active()
    sys.monitoring.free_tool_id(ev._BACKEND.tool)
    print(json.dumps({"backend": ev.backend(), "handled": rec.handled(), "active": active,
                      "after_free": rec.active()}))
"""
)


@unittest.skipIf(python312() is None, "no Python >= 3.12 here (the GPU machine's harness runs on one)")
class MonitoringTest(unittest.TestCase):
    """The same record through sys.monitoring, in a Python >= 3.12 (torch not needed)."""

    def test_handled_exceptions_through_sys_monitoring(self):
        import json

        with tempfile.TemporaryDirectory() as tmp:
            cand = write(tmp, "cand.py", CANDIDATE)
            script = write(tmp, "run.py", MONITORING_SCRIPT)
            proc = subprocess.run(
                [python312(), "-I", script, os.path.join(HARNESS, "evokernel_harness", "evidence.py"), cand],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr)
            out = json.loads(proc.stdout)
        self.assertEqual(out["backend"], "sys.monitoring")
        kinds = sorted((e["type"], e["line"], e["count"]) for e in out["handled"])
        # optional()'s except twice, cached()'s KeyError once; unhandled() handled by the script, not by candidate code
        self.assertEqual(kinds, [("KeyError", 13, 1), ("ModuleNotFoundError", 5, 2)])
        self.assertTrue(out["active"])
        self.assertFalse(out["after_free"])  # a candidate that frees the tool id is seen

    def test_no_tool_id_to_be_had_is_no_tampering(self):
        """Every sys.monitoring tool id already in use (debuggers, coverage, profilers): no
        record, said so, and no honest candidate refused for a record it never switched off."""
        import json

        script = textwrap.dedent(
            """
            import importlib.util, json, sys
            for tool in range(6):
                if sys.monitoring.get_tool(tool) is None:
                    sys.monitoring.use_tool_id(tool, "someone else")
            spec = importlib.util.spec_from_file_location("ev", sys.argv[1])
            ev = importlib.util.module_from_spec(spec); spec.loader.exec_module(ev)
            rec = ev.watch(sys.argv[2])
            print(json.dumps({"backend": ev.backend(), "active": rec.active()}))
        """
        )
        with tempfile.TemporaryDirectory() as tmp:
            cand = write(tmp, "cand.py", CANDIDATE)
            path = write(tmp, "full.py", script)
            proc = subprocess.run(
                [python312(), "-I", path, os.path.join(HARNESS, "evokernel_harness", "evidence.py"), cand],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr)
            out = json.loads(proc.stdout)
        self.assertEqual(out, {"backend": "none (every sys.monitoring tool id in use)", "active": True})


class BackendFlagsTest(unittest.TestCase):
    def setUp(self):
        self.saved = backend_flags.snapshot()

    def tearDown(self):
        backend_flags.apply(self.saved)

    def test_the_candidates_flags_apply_around_its_calls_only(self):
        torch.backends.cudnn.benchmark = False
        scoped = backend_flags.Scoped()
        scoped.enter()
        torch.backends.cudnn.benchmark = True  # what a candidate's module does at import
        scoped.leave()
        self.assertFalse(torch.backends.cudnn.benchmark, "the reference must run with the harness's flags")
        seen = []
        scoped.enter()
        seen.append(torch.backends.cudnn.benchmark)
        scoped.leave()
        self.assertEqual(seen, [True], "the candidate's calls run with its own flags")
        self.assertFalse(torch.backends.cudnn.benchmark)
        self.assertEqual(scoped.changes(), {"torch.backends.cudnn.benchmark": (False, True)})
        self.assertIn("torch.backends.cudnn.benchmark = True", scoped.describe()[0])

    def test_a_precision_flag_is_named_as_one(self):
        scoped = backend_flags.Scoped()
        scoped.enter()
        torch.set_float32_matmul_precision(
            "high" if scoped.harness["torch.float32_matmul_precision"] != "high" else "medium"
        )
        scoped.leave()
        self.assertEqual(torch.get_float32_matmul_precision(), scoped.harness["torch.float32_matmul_precision"])
        self.assertIn("precision flag", " ".join(scoped.describe()))

    def test_a_flag_torch_refuses_to_read_is_restored_and_not_reported(self):
        # torch >= 2.9 raises on reading the old matmul precision after code mixed the old and
        # new precision APIs (seen on the H100, torch 2.11): the harness must still restore its own
        state = {"value": "highest", "mixed": False}

        def get():
            if state["mixed"]:
                raise RuntimeError("you have used mix of the legacy and new APIs to set the matmul precision")
            return state["value"]

        def set_(value):
            state.update(value=value, mixed=False)

        with mock.patch.dict(backend_flags._AVAILABLE, {"fake.matmul_precision": (get, set_)}, clear=True):
            scoped = backend_flags.Scoped()
            scoped.enter()
            state.update(value="high", mixed=True)  # what a candidate's module does at import
            scoped.leave()
            self.assertEqual(get(), "highest", "the reference must run with the harness's setting")
            self.assertEqual(scoped.changes(), {})
            scoped.enter()  # the candidate's unreadable setting is not applied (nor refused)
            scoped.leave()
            self.assertEqual(get(), "highest")


GEMM = (
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas"
)
NVJET = "nvjet_tst_128x64_64x8_1x2_h_bz_NNT"
SILU = "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel>"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"


class WhoseKernelsTest(unittest.TestCase):
    def test_cublas_gemms_beside_an_own_fused_kernel_pass_with_their_share(self):
        """robust-kbench's Llama FFN: three GEMMs through cuBLAS, SwiGLU fused in its own kernel.
        The reference's GEMMs are nearly all of its time; its SiLU and multiply are replaced."""
        ref = {NVJET: 3000.0, SILU: 20.0, MUL: 20.0}
        cand = {NVJET: 3000.0, "swiglu_kernel(float const*, float const*, float*, long)": 15.0}
        v = own_kernel.judge([("c", cand, ref)], {"swiglu_kernel(float const*, float const*, float*, long)"})
        self.assertTrue(v["ok"], v["detail"])
        self.assertIn("library kernels", v["detail"])

    def test_every_reference_kernel_plus_an_own_token_stays_a_fallback(self):
        ref = {SOFTMAX: 300.0}
        cand = {SOFTMAX: 300.0, "prefetch_rows(float const*, float*, long, long)": 3.0}
        self.assertFalse(
            own_kernel.judge([("c", cand, ref)], {"prefetch_rows(float const*, float*, long, long)"})["ok"]
        )

    def test_a_candidate_with_no_kernel_of_its_own_is_a_rewrite(self):
        ref = {SOFTMAX: 300.0}
        v = own_kernel.rewrite_verdict([("c", {"void at::native::reduce_kernel<max>": 80.0, "exp_kernel": 50.0}, ref)])
        self.assertTrue(v["ok"])
        self.assertTrue(v["rewrite"])
        self.assertIn("a PyTorch rewrite", v["detail"])


def fake_candidate(handled=(), flags=None):
    rec = evidence.Recorder("/nonexistent/cand.py")
    rec.kinds = {(e["phase"], e["line"], e["type"]): dict(e) for e in handled}
    scoped = types.SimpleNamespace(changes=lambda: flags or {}, describe=lambda: [])
    return types.SimpleNamespace(evidence=rec, flags=scoped)


def passed():
    return {
        "ok": True,
        "status": "passed",
        "reason": None,
        "hack": None,
        "message": "passed",
        "warnings": [],
        "checks": [{"name": "own-kernel-ran", "ok": True, "detail": ""}],
    }


class VerdictTest(unittest.TestCase):
    BUILD = {
        "phase": "load",
        "line": 30,
        "type": "RuntimeError",
        "message": evidence.describe(RuntimeError(BUILD_LOG)),
        "count": 1,
    }

    def task(self, own="allow"):
        return types.SimpleNamespace(own_kernels=own, own_kernels_rule=lambda: "KernelBench's rule")

    def test_a_failed_build_whose_fallback_ran_is_named_so(self):
        own = {
            "ok": False,
            "detail": "none of its kernels (softmax_rows) ran on configuration 4096x8192; "
            "launched: cunn_SoftMaxForward",
            "shares": None,
        }
        rec = verdict.after_verification(passed(), self.task(), fake_candidate([self.BUILD]), "cuda", own)
        self.assertEqual(rec["reason"], "torch-fallback")
        self.assertIn("the extension build failed", rec["message"])
        self.assertIn("'forward' was not declared in this scope", rec["message"])
        self.assertIn("the fallback ran", rec["message"])
        self.assertIn("cunn_SoftMaxForward", rec["message"])

    def test_a_handled_exception_whose_own_kernels_did_the_work_is_a_warning(self):
        own = {"ok": True, "detail": "ran softmax_rows", "ownKernels": ["softmax_rows(float*)"], "shares": None}
        cache_miss = {"phase": "verify", "line": 40, "type": "KeyError", "message": "(4096, 8192)", "count": 2}
        rec = verdict.after_verification(passed(), self.task(), fake_candidate([cache_miss]), "cuda", own)
        self.assertTrue(rec["ok"])
        self.assertTrue(any("KeyError" in w and "did the work anyway" in w for w in rec["warnings"]), rec["warnings"])

    def test_a_rewrite_passes_where_the_task_allows_it_and_says_so(self):
        own = {"ok": True, "rewrite": True, "detail": "a PyTorch rewrite: no kernel of its own", "shares": None}
        rec = verdict.after_verification(passed(), self.task("allow"), fake_candidate(), "cuda", own)
        self.assertTrue(rec["ok"])
        self.assertTrue(any("reported as a rewrite" in w for w in rec["warnings"]))
        self.assertEqual(rec["checks"][-1]["name"], "pytorch-rewrite")

    def test_a_rewrite_is_refused_where_the_task_requires_own_kernels_saying_exactly_that(self):
        own = {"ok": True, "rewrite": True, "detail": "a PyTorch rewrite: no kernel of its own", "shares": None}
        rec = verdict.after_verification(passed(), self.task("require"), fake_candidate(), "cuda", own)
        self.assertEqual((rec["ok"], rec["status"], rec["reason"]), (False, "rejected", "own-kernel-required"))
        self.assertIn("requires the candidate's own kernels (KernelBench's rule)", rec["message"])


class StaticFindingsAreEvidenceTest(unittest.TestCase):
    def check(self, src):
        return static_check.check("c.py", src, "py", frozenset({"softmax"}), strict=True)

    def test_honest_idioms_are_warnings(self):
        src = textwrap.dedent(
            """
            import importlib
            import torch
            torch.backends.cudnn.benchmark = True
            try:
                ext = load_inline(name="x", cpp_sources="", cuda_sources="", functions=["forward"])
            except Exception:
                ext = None
            def forward(x):
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    y = ext.forward(x) if ext is not None else torch.softmax(x, -1)
                torch.cuda.current_stream().wait_stream(s)
                return y
        """
        )
        rec = self.check(src)
        self.assertTrue(rec["ok"], rec["findings"])
        codes = {f["code"] for f in rec["findings"]}
        self.assertTrue({"global-state", "torch-fallback", "side-stream", "timer-patching"} <= codes, codes)
        self.assertEqual({f["severity"] for f in rec["findings"]}, {"warn"})

    def test_replacing_the_timer_stays_a_refusal(self):
        rec = self.check("import torch\ntorch.cuda.Event.elapsed_time = lambda a, b: 0.001\n")
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["findings"][0]["code"], "timer-patching")


SPIN = "spin_kernel(long)"


class StreamsTest(unittest.TestCase):
    """streams.escaped on traces of one call placed as the timer places it: a head-start sleep
    on the caller's stream (7), the call, a short sleep where the end event goes."""

    def test_a_side_stream_joined_both_ways_is_timed_in_full(self):
        events = [
            (SPIN, 7, 0.0, 500.0),
            ("own_rows(float*)", 7, 501.0, 600.0),
            ("own_cols(float*)", 13, 502.0, 590.0),
            (SPIN, 7, 601.0, 602.0),
        ]
        out = streams.escaped(events)
        self.assertEqual(out["escaped"], [])
        self.assertEqual(out["streams"], ["13", "7"])

    def test_work_beside_the_head_start_escaped(self):
        """A side stream that never waits for the caller's: it runs while the timer's sleep does."""
        events = [(SPIN, 7, 0.0, 500.0), ("softmax_kernel(float*)", 21, 12.0, 412.0), (SPIN, 7, 501.0, 502.0)]
        out = streams.escaped(events)
        self.assertEqual(len(out["escaped"]), 1)
        text = streams.describe(out)
        self.assertIn(
            "stream 21: softmax_kernel(float*) (0.400 ms; started before the caller's stream reached the call)", text
        )
        self.assertIn("never waited for it", text)

    def test_work_the_caller_never_joined_escaped(self):
        """A CUDA graph of the reference replayed on a side stream, wait_stream called inside
        the side stream's own block (it waits on itself): the caller's stream ends first."""
        events = [(SPIN, 7, 0.0, 500.0), ("cunn_SoftMaxForward", 21, 501.0, 900.0), (SPIN, 7, 502.0, 503.0)]
        out = streams.escaped(events)
        self.assertEqual([e[3] for e in out["escaped"]], ["ended after the caller's stream had finished the call"])

    def test_no_markers_no_verdict(self):
        self.assertIsNone(streams.escaped([("k", 7, 0.0, 1.0)]))

    def test_a_head_start_the_call_outlasted_is_asked_again_longer(self):
        """A host that launched after the head start ran out (descheduled, or waiting on
        purpose): its side-stream kernel lies inside the window. The check asks again with a
        head start 8x longer; that trace, covering the launch, shows the kernel escaping."""
        late = [(SPIN, 7, 0.0, 500.0), ("softmax_kernel(float*)", 21, 900.0, 950.0), (SPIN, 7, 960.0, 961.0)]
        early = [(SPIN, 7, 0.0, 4000.0), ("softmax_kernel(float*)", 21, 900.0, 950.0), (SPIN, 7, 4001.0, 4002.0)]
        asked = []

        def trace(fn, cycles):
            asked.append(cycles)
            return (late, False) if len(asked) == 1 else (early, True)

        with mock.patch.object(streams, "trace_call", trace):
            result, uncovered = streams._trace_until_covered(lambda: None, 1000)
        self.assertEqual(asked, [1000, 8000])
        self.assertEqual(uncovered, 0.0)
        self.assertEqual(len(result["escaped"]), 1)

    def test_a_call_no_head_start_covers_is_said_so(self):
        """A call that waits for the device returns after every head start: the last trace
        stands (its work inside the window) and the length of that head start is reported."""
        inside = [(SPIN, 7, 0.0, 32000.0), ("own(float*)", 7, 32001.0, 32100.0), (SPIN, 7, 32101.0, 32102.0)]
        asked = []

        def trace(fn, cycles):
            asked.append(cycles)
            return inside, False

        with mock.patch.object(streams, "trace_call", trace):
            result, uncovered = streams._trace_until_covered(lambda: None, 1000)
        self.assertEqual(asked, [1000, 8000, 64000])
        self.assertEqual(result["escaped"], [])
        self.assertAlmostEqual(uncovered, 32.0)


REPO = os.path.normpath(os.path.join(HARNESS, "..", ".."))
SHARED = os.environ.get("EVOKERNEL_SHARED_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")
RKB_CE = os.path.join(SHARED, "robust-kbench", "tasks", "mnist_cross_entropy")


@unittest.skipUnless(os.path.isdir(RKB_CE), "public robust-kbench data not found (../shared/data)")
class PublicFormatRulesTest(unittest.TestCase):
    def test_a_one_element_loss_for_a_scalar_reference_passes_with_a_warning(self):
        """Issue 18.7: robust-kbench's own harness accepts shape (1,) for a 0-dim loss."""
        rec = verify_cpu(RKB_CE, os.path.join(HERE, "candidates", "ok_cross_entropy_one_element.py"))
        self.assertTrue(rec["ok"], rec["message"])
        self.assertTrue(
            any("has shape (1,) where the reference returns ()" in w for w in rec["warnings"]), rec["warnings"]
        )


def verify_cpu(task, candidate):
    import json

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "evokernel_harness",
                "verify",
                "--device",
                "cpu",
                "--seed",
                "5",
                "--task",
                task,
                "--candidate",
                candidate,
                "--out",
                out,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONPATH": HARNESS},
        )
        if not os.path.exists(out):
            raise AssertionError(proc.stderr[-2000:])
        with open(out) as f:
            return json.load(f)


class KernelBenchModeTest(unittest.TestCase):
    """Issue 18.6/18.7: the Model runs as KernelBench runs it (training mode: BatchNorm with the
    batch's statistics); a ModelNew switched to eval is refused, and the message says so."""

    TASK = os.path.join(HERE, "tasks", "small_batchnorm.py")

    def test_batch_statistics_pass(self):
        rec = verify_cpu(self.TASK, os.path.join(HERE, "candidates", "kb_batchnorm_batch_stats.py"))
        self.assertTrue(rec["ok"], rec["message"])

    def test_a_module_switched_to_eval_is_refused_naming_the_mode(self):
        rec = verify_cpu(self.TASK, os.path.join(HERE, "candidates", "kb_batchnorm_eval_mode.py"))
        self.assertEqual(rec["status"], "rejected", rec["message"])
        self.assertIn(rec["reason"], ("mismatch", "distribution-specific"))
        self.assertIn(
            "its BatchNorm2d is in eval mode (running statistics instead of the batch's) where the "
            "reference's Model is in training mode",
            rec["message"],
        )


if __name__ == "__main__":
    unittest.main()
