"""Correct kernels written the way people write them must pass (issue 7), and what stays a
fallback must stay rejected: the own-kernel rule on traces, the static check's warnings for
torch ops that are not the task's own, robust-kbench backward tasks whose Model keeps unused
parameters, the profiler window of a backward task, and reasons that name what went wrong."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

from evokernel_harness import own_kernel, static_check, verify
from evokernel_harness.tasks import load_task
from evokernel_harness.tasks.base import count_flops

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SHARED = os.environ.get("EVOKERNEL_SHARED_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")
RKB = os.path.join(SHARED, "robust-kbench", "tasks")
FIX = os.path.join(REPO, "test", "fixtures")

GEMM = (
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas"
)
NVJET = "nvjet_tst_128x64_64x8_1x2_h_bz_NNT"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"
RSQRT = "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda>"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"


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


class OwnKernelRuleTest(unittest.TestCase):
    """judge() on the traces the profiler gives: [(config, candidate µs by kernel, reference µs by kernel)]."""

    def test_gemm_through_cublas_with_own_epilogue_passes_and_states_the_library_share(self):
        ref = {GEMM: 900.0, ADD: 40.0, RELU: 40.0}
        cand = {NVJET: 880.0, "bias_relu_kernel(float*, float const*, int, int)": 30.0}
        v = own_kernel.judge(
            [("4096", cand, ref), ("odd", cand, ref)], {"bias_relu_kernel(float*, float const*, int, int)"}
        )
        self.assertTrue(v["ok"], v["detail"])
        self.assertAlmostEqual(v["shares"]["library"], 880 / 910, places=3)
        self.assertIn("library kernels", v["detail"])
        self.assertEqual(v["libraryKernels"], [NVJET])

    def test_same_gemm_kernel_as_the_reference_with_own_epilogue_passes(self):
        ref = {GEMM: 900.0, ADD: 40.0, RELU: 40.0}
        cand = {GEMM: 900.0, "fused_bias_relu(float*)": 30.0}
        self.assertTrue(own_kernel.judge([("c", cand, ref)], {"fused_bias_relu(float*)"})["ok"])

    def test_reference_ops_plus_a_token_kernel_is_a_fallback(self):
        ref = {GEMM: 900.0, ADD: 40.0, RELU: 40.0}
        cand = {GEMM: 900.0, ADD: 40.0, RELU: 40.0, "token(float*)": 2.0}
        v = own_kernel.judge([("c", cand, ref)], {"token(float*)"})
        self.assertFalse(v["ok"])
        self.assertIn("every kernel the reference does its work in", v["detail"])

    def test_torch_doing_most_of_the_work_is_a_fallback(self):
        """A different decomposition (mm + add + relu) than the reference's, plus a token kernel."""
        ref = {GEMM: 900.0, "void at::native::addmm_bias_relu": 80.0}
        cand = {NVJET: 880.0, ADD: 40.0, RELU: 40.0, "token(float*)": 2.0}
        v = own_kernel.judge([("c", cand, ref)], {"token(float*)"})
        self.assertFalse(v["ok"])
        self.assertIn("PyTorch's kernels", v["detail"])

    def test_library_call_for_a_task_that_is_a_library_call_is_a_fallback(self):
        ref = {GEMM: 900.0}
        cand = {NVJET: 880.0, "touch(float*)": 3.0}
        v = own_kernel.judge([("c", cand, ref)], {"touch(float*)"})
        self.assertFalse(v["ok"])
        self.assertIn("library call", v["detail"])

    def test_small_host_side_torch_ops_pass(self):
        ref = {SOFTMAX: 300.0}
        cand = {RSQRT: 2.0, FILL: 1.0, "norm_kernel(float const*, float*)": 250.0}
        v = own_kernel.judge([("c", cand, ref)], {"norm_kernel(float const*, float*)"})
        self.assertTrue(v["ok"], v["detail"])
        self.assertIn("PyTorch kernels", v["detail"])

    def test_own_kernel_must_run_on_every_configuration(self):
        """A branch that takes the fast path on small shapes only."""
        ref = {SOFTMAX: 300.0}
        fast = {"softmax_rows(float*)": 200.0}
        v = own_kernel.judge([("small", fast, ref), ("large", {SOFTMAX: 300.0}, ref)], {"softmax_rows(float*)"})
        self.assertFalse(v["ok"])
        self.assertIn("configuration large", v["detail"])

    def test_libraries_deny_refuses_any_library_kernel(self):
        ref = {GEMM: 900.0, ADD: 40.0, RELU: 40.0}
        cand = {NVJET: 880.0, "bias_relu_kernel(float*)": 30.0}
        v = own_kernel.judge([("c", cand, ref)], {"bias_relu_kernel(float*)"}, libraries="deny")
        self.assertFalse(v["ok"])
        self.assertIn("libraries", v["detail"])

    def test_classify(self):
        self.assertEqual(own_kernel.classify(GEMM, ()), "library")
        self.assertEqual(own_kernel.classify(NVJET, ()), "library")
        self.assertEqual(own_kernel.classify("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>", ()), "library")
        self.assertEqual(own_kernel.classify(RELU, ()), "torch")
        self.assertEqual(own_kernel.classify(FILL, ()), "harmless")
        self.assertEqual(own_kernel.classify("my_gemm_kernel(float*)", {"my_gemm_kernel(float*)"}), "own")


class StaticTorchOpsTest(unittest.TestCase):
    EXT = """
#include <torch/extension.h>
__global__ void scale_kernel(const float* x, const float* s, float* y, int n, int c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s[i % c];
}
torch::Tensor forward(torch::Tensor x, torch::Tensor var, torch::Tensor weight) {
  auto s = torch::rsqrt(var + 1e-5) * weight;   // per-channel, on a small vector
  auto y = torch::empty_like(x);
  scale_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), s.data_ptr<float>(), y.data_ptr<float>(),
                                                 x.numel(), s.numel());
  return y;
}
"""

    def findings(self, source, ref_ops, libraries="allow", fmt="torch-ext"):
        return static_check.check("c.cu", source, fmt, frozenset(ref_ops), strict=True, libraries=libraries)

    def test_host_side_small_ops_are_warnings(self):
        rec = self.findings(self.EXT, {"batch_norm"})
        self.assertTrue(rec["ok"], rec["findings"])
        codes = {(f["code"], f["severity"]) for f in rec["findings"]}
        self.assertIn(("torch-op", "warn"), codes)

    def test_the_tasks_own_op_is_evidence_the_trace_decides(self):
        """Issue 18: a call of the reference's op is a warning naming the op; the trace refuses
        it where the candidate's own kernels do not do the work (OwnKernelRuleTest)."""
        src = self.EXT.replace("torch::rsqrt(var + 1e-5) * weight", "torch::softmax(x, -1)")
        rec = self.findings(src, {"softmax"})
        self.assertTrue(rec["ok"], rec["findings"])
        hit = next(f for f in rec["findings"] if f["code"] == "torch-fallback")
        self.assertEqual(hit["severity"], "warn")
        self.assertIn("softmax", hit["message"])

    def test_library_ops_of_the_reference_are_warnings_even_where_libraries_are_denied(self):
        """With "libraries": "deny" the trace refuses any library kernel that runs
        (test_libraries_deny_refuses_any_library_kernel); the static finding says so."""
        src = self.EXT.replace("torch::rsqrt(var + 1e-5) * weight", "torch::matmul(x, weight.t())")
        self.assertTrue(self.findings(src, {"matmul", "relu"})["ok"])
        denied = self.findings(src, {"matmul", "relu"}, libraries="deny")
        self.assertTrue(denied["ok"])
        self.assertIn(
            "forbids libraries", next(f for f in denied["findings"] if f["code"] == "torch-fallback")["message"]
        )

    def test_python_at_operator_is_a_warning(self):
        src = "import torch\ndef forward(x, w, b):\n    return my_kernel(x @ w.t(), b)\n"
        rec = self.findings(src, {"linear", "relu"}, fmt="py")
        self.assertTrue(rec["ok"], rec["findings"])
        self.assertEqual(rec["findings"][0]["severity"], "warn")


@unittest.skipUnless(os.path.isdir(RKB), "public robust-kbench data not found (../shared/data)")
class RobustKBenchBackwardTest(unittest.TestCase):
    def test_unused_module_parameters_are_not_gradients(self):
        """mnist_linear's Model keeps an nn.Linear it never uses beside its own weights and
        biases: the reference produces gradients for x, weights and biases only."""
        task = load_task(os.path.join(RKB, "mnist_linear") + "#backward")
        config = task.configs[0]
        case = task.make_case(config, 1, "cpu")
        grads = task.invoke(task.reference_entry(), case.clone())
        self.assertEqual(task._grad_names, ["param:weights", "param:biases", "input:0"])
        self.assertEqual(
            [tuple(g.shape) for g in grads][:2], [tuple(case.module.weights.shape), tuple(case.module.biases.shape)]
        )

    def test_a_correct_backward_candidate_verifies(self):
        for folder in ("mnist_linear", "mnist_linear_relu"):
            with self.subTest(folder=folder):
                cand = os.path.join(tempfile.mkdtemp(), "candidate.py")
                with open(cand, "w") as f:
                    f.write(BACKWARD[folder])
                rec = harness(
                    "verify",
                    "--device",
                    "cpu",
                    "--seed",
                    "3",
                    "--heldout",
                    "--task",
                    os.path.join(RKB, folder) + "#backward",
                    "--candidate",
                    cand,
                )
                self.assertTrue(rec["ok"], rec["message"])

    def test_the_profiled_call_runs_the_backward_pass_alone(self):
        task = load_task(os.path.join(RKB, "mnist_linear") + "#backward")
        case = task.make_case(task.configs[0], 1, "cpu")
        calls = []
        original = task.module.forward_fn
        task.module.forward_fn = lambda *a, **k: (calls.append("forward"), original(*a, **k))[1]
        try:
            run = task.staged(task.reference_entry(), case.clone())
            self.assertEqual(calls, ["forward"])
            grads = run()
            self.assertEqual(calls, ["forward"])  # the returned call ran no forward pass
        finally:
            task.module.forward_fn = original
        self.assertEqual(len(grads), 3)

    def test_a_wrong_gradient_count_names_the_missing_gradient(self):
        task = load_task(os.path.join(RKB, "mnist_linear") + "#backward")
        case = task.make_case(task.configs[0], 1, "cpu")

        def backward(grad_output, x, weights):
            return grad_output @ weights, None, grad_output.sum(0)

        with self.assertRaisesRegex(RuntimeError, "no gradient produced for param:weights"):
            task.invoke(backward, case)


BACKWARD = {
    "mnist_linear": """
import torch

def backward(grad_output, x, weights):
    return grad_output.mm(weights), grad_output.t().mm(x), grad_output.sum(0)
""",
    "mnist_linear_relu": None,  # filled below from the task's own signature
}


def _linear_relu_backward():
    path = os.path.join(RKB, "mnist_linear_relu", "func_backward.py")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        text = f.read()
    # the task's backward_fn receives what its forward saved; mirror its reference math
    return (
        text[:0]
        + """
import torch

def backward(grad_output, x, weights, biases):
    pre = x.mm(weights.t()) + biases
    g = grad_output * (pre > 0).to(grad_output.dtype)
    return g.mm(weights), g.t().mm(x), g.sum(0)
"""
    )


BACKWARD["mnist_linear_relu"] = _linear_relu_backward()


class ReasonTextTest(unittest.TestCase):
    def test_zero_dim_output_says_what_to_return(self):
        msg = verify.shape_message(0, (1,), ())
        self.assertIn("0-dim", msg)
        self.assertIn("out.reshape(())", msg)

    def test_same_size_other_shape_says_reshape(self):
        self.assertIn("out.reshape((4, 8))", verify.shape_message(1, (32,), (4, 8)))

    def test_accuracy_loss_on_signed_mixed_inputs_is_named_for_what_it_is(self):
        """Right on the declared inputs, a little off on signed, mixed-scale ones (it rounds
        large values through bfloat16): an accuracy loss, not dropped work."""
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "5",
            "--task",
            os.path.join(FIX, "tasks", "small_relu"),
            "--candidate",
            os.path.join(HERE, "candidates", "ok_relu_rounds_large_inputs.py"),
        )
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["reason"], "accuracy-loss", rec["message"])
        self.assertIn("loses accuracy on signed, mixed-scale inputs", rec["message"])
        self.assertIn("against the tolerance", rec["message"])

    def test_dropped_work_stays_distribution_specific(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "5",
            "--task",
            os.path.join(FIX, "tasks", "small_relu"),
            "--candidate",
            os.path.join(FIX, "tasks", "small_relu", "candidate_copy.py"),
        )
        self.assertEqual(rec["reason"], "distribution-specific", rec["message"])

    def test_a_dropped_column_is_a_mismatch_not_reduced_precision(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "5",
            "--task",
            os.path.join(REPO, "kernels", "row_sum"),
            "--candidate",
            os.path.join(HERE, "candidates", "wrong_row_sum_last_column.py"),
        )
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["reason"], "mismatch", rec["message"])

    def test_bfloat16_arithmetic_stays_reduced_precision(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "5",
            "--task",
            os.path.join(FIX, "tasks", "small_softmax"),
            "--candidate",
            os.path.join(HERE, "candidates", "h07_bfloat16.py"),
        )
        self.assertEqual(rec["reason"], "reduced-precision", rec["message"])


class FlopCountTest(unittest.TestCase):
    def test_counted_or_zero(self):
        a, b = torch.randn(8, 16), torch.randn(16, 4)
        flops = count_flops(lambda: a @ b)
        has_counter = hasattr(torch.utils, "flop_counter") or _importable("torch.utils.flop_counter")
        self.assertEqual(flops, 2 * 8 * 16 * 4 if has_counter else 0)


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    unittest.main()


class ChunkedCompareTest(unittest.TestCase):
    def test_chunks_give_the_one_pass_result(self):
        from evokernel_harness.compare import compare

        gen = torch.Generator().manual_seed(4)
        expected = torch.randn(37, 53, generator=gen) * torch.logspace(-2, 2, 53)
        got = expected + 1e-6 * torch.randn(37, 53, generator=gen)
        got[5, 7] = float("nan")
        got[20, 3] += 0.5
        tol = {"atol": 1e-5, "rtol": 1e-5, "norm": 1e-5}
        whole = compare(got, expected, tol, chunk=1 << 30)
        for chunk in (1, 7, 100, 1961):
            with self.subTest(chunk=chunk):
                part = compare(got, expected, tol, chunk=chunk)
                self.assertAlmostEqual(part.pop("normRel"), whole["normRel"], delta=1e-12)  # summation order
                self.assertEqual(part, {k: v for k, v in whole.items() if k != "normRel"})
        self.assertEqual(whole["nonFinite"], 1)
        self.assertEqual(whole["index"], [5, 7])


class Float64TruthTest(unittest.TestCase):
    def test_a_kernel_closer_to_the_truth_than_the_reference_passes(self):
        """A sum over many float32 values: the float32 reference rounds, a float64 accumulator
        does not; the candidate is outside the tolerance of the reference but within it of the
        truth, and passes with a warning that says so."""
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "9",
            "--task",
            os.path.join(HERE, "tasks", "long_sum"),
            "--candidate",
            os.path.join(HERE, "tasks", "long_sum", "candidate_float64_accumulator.py"),
        )
        self.assertTrue(rec["ok"], rec["message"])
        self.assertTrue(any("computed in float64" in w for w in rec["warnings"]), rec["warnings"])

    def test_a_kernel_off_from_both_is_still_rejected(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "9",
            "--task",
            os.path.join(HERE, "tasks", "long_sum"),
            "--candidate",
            os.path.join(HERE, "tasks", "long_sum", "candidate_half_accumulator.py"),
        )
        self.assertFalse(rec["ok"])


class OffsetInputsTest(unittest.TestCase):
    TASK = os.path.join(HERE, "tasks", "small_layernorm")

    def test_one_pass_variance_is_an_accuracy_loss_on_offset_inputs(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "11",
            "--task",
            self.TASK,
            "--candidate",
            os.path.join(HERE, "candidates", "ok_layernorm_one_pass_variance.py"),
        )
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["reason"], "accuracy-loss", rec["message"])
        self.assertIn("common offset", rec["message"])
        self.assertIn("one-pass variance", rec["message"])

    def test_two_pass_variance_passes(self):
        rec = harness(
            "verify",
            "--device",
            "cpu",
            "--seed",
            "11",
            "--task",
            self.TASK,
            "--candidate",
            os.path.join(HERE, "candidates", "ok_layernorm_two_pass.py"),
        )
        self.assertTrue(rec["ok"], rec["message"])
        self.assertEqual(max(c["trials"] for c in rec["configs"]), 4)  # 2 declared, signed-mixed, offset


class BenchMemoryTest(unittest.TestCase):
    """KernelBench problems with inputs of several GiB: the timing rotates fewer input sets
    instead of running out of GPU memory (seen on the H100: 6-7 GiB inputs, 4 sets + 2 sources)."""

    def test_rotation_fits_half_of_the_free_memory(self):
        from unittest import mock

        from evokernel_harness import bench
        from evokernel_harness.tasks.base import Case

        case = Case(args=[torch.empty(1024, dtype=torch.float32)])  # 4 KiB
        cuda = torch.device("cuda")
        # nothing cached by PyTorch's allocator in these cases (on the H100, earlier
        # configurations' cached blocks count as free: see the last case)
        self.enterContext(mock.patch.object(torch.cuda, "memory_reserved", return_value=0))
        self.enterContext(mock.patch.object(torch.cuda, "memory_allocated", return_value=0))
        with mock.patch.object(torch.cuda, "mem_get_info", return_value=(1 << 40, 1 << 40)):
            self.assertEqual(bench.rotation(case, cuda), bench.ROTATE)
        with mock.patch.object(torch.cuda, "mem_get_info", return_value=(5 * 4096 * 2, 1 << 40)):
            self.assertEqual(bench.rotation(case, cuda), 3)  # 3 sets + 2 sources in half of it
        with mock.patch.object(torch.cuda, "mem_get_info", return_value=(4096, 1 << 40)):
            self.assertEqual(bench.rotation(case, cuda), 1)  # never fewer than one
        self.assertEqual(bench.rotation(case, torch.device("cpu")), bench.ROTATE)
        with (
            mock.patch.object(torch.cuda, "mem_get_info", return_value=(4096, 1 << 40)),
            mock.patch.object(torch.cuda, "memory_reserved", return_value=1 << 30),
        ):
            self.assertEqual(bench.rotation(case, cuda), bench.ROTATE)  # the allocator's cache is room too

    def test_signed_mixed_inputs_keep_their_distribution(self):
        from evokernel_harness.inputs import generator, signed_mixed_like

        x = signed_mixed_like(torch.empty(200_000), generator(3, "cpu"))
        mags = x.abs().log10()
        self.assertTrue(bool((x < 0).any()) and bool((x > 0).any()))
        self.assertGreater(float(mags.quantile(0.9) - mags.quantile(0.1)), 3.0)  # four decades of scale
        self.assertEqual(x.dtype, torch.float32)
