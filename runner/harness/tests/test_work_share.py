"""Issue 33.2: whose work it is, is decided by the work (work.py): PyTorch kernels on parameter
vectors and shapes are set-up, whatever their share of the GPU's time; PyTorch kernels on the
activations doing the reference's work make a fallback. On the CPU with the profiler's data
made by hand (the kernel names the H200 showed), and the profiler's own event API on the CPU
for how kernels are tied to their operators' shapes."""

import types
import unittest

import torch

from evokernel_harness import own_kernel, work

CONV = "sm90_xmma_fprop_implicit_gemm_indexed_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32"
BN_STATS = "void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, float, int>"
BN_APPLY = "void at::native::batch_norm_transform_input_kernel<float, float, float, float, int, true>"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, MulFunctor>>"
RSQRT = "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda>"
OWN = "void fused_bn_relu_residual_kernel<float>(float const*, float const*, float const*, float*, long, int)"

ACTIVATION = 8 * 64 * 56 * 56  # the block's input, N×C×H×W
REFERENCE = {CONV: 120.0, BN_STATS: 30.0, BN_APPLY: 25.0, RELU: 12.0, ADD: 12.0}


def resnet_block(elements_of_add=64):
    """The published ResNet block's trace on a small shape: cuDNN's convolutions, torch ops on
    the 64 BatchNorm parameters (scale = w * rsqrt(var + eps), shift = b - mean * scale: many
    tiny launches, 47 % of the GPU's time), its own fused BN-affine + ReLU + residual kernel."""
    cand = {CONV: 100.0, ADD: 40.0, RSQRT: 30.0, MUL: 30.0, OWN: 5.0}
    elements = {ADD: elements_of_add, RSQRT: 64, MUL: 64}
    return cand, elements


class WorkShareTest(unittest.TestCase):
    def test_the_resnet_blocks_parameter_ops_are_set_up_and_it_passes(self):
        cand, elements = resnet_block()
        # by time alone (no shapes) it is refused, as on 2026-11-28
        self.assertFalse(own_kernel.judge([("c", cand, REFERENCE)], {OWN})["ok"])
        v = own_kernel.judge([("c", cand, REFERENCE)], {OWN}, work={"c": (elements, ACTIVATION)})
        self.assertTrue(v["ok"], v["detail"])
        self.assertIn("PyTorch kernels", v["detail"])  # its share is still stated

    def test_the_residual_add_left_to_torch_on_the_activations_is_refused(self):
        cand, elements = resnet_block(elements_of_add=ACTIVATION)
        v = own_kernel.judge([("c", cand, REFERENCE)], {OWN}, work={"c": (elements, ACTIVATION)})
        self.assertFalse(v["ok"])
        self.assertIn("do the reference's work on the activations", v["detail"])
        self.assertIn("CUDAFunctor_add", v["detail"])
        self.assertIn(f"{ACTIVATION} elements", v["detail"])

    def test_torch_work_on_the_activations_that_the_reference_does_not_do_counts_by_time(self):
        """A different decomposition: its own token kernel, torch's add and clamp on activations."""
        ref = {CONV: 120.0, "void at::native::fused_bn_relu": 40.0}
        cand = {CONV: 100.0, ADD: 40.0, RELU: 40.0, "token(float*)": 2.0}
        elements = {ADD: ACTIVATION, RELU: ACTIVATION}
        v = own_kernel.judge([("c", cand, ref)], {"token(float*)"}, work={"c": (elements, ACTIVATION)})
        self.assertFalse(v["ok"])
        self.assertIn("PyTorch's kernels on the activations", v["detail"])

    def test_a_parameter_op_sharing_a_name_with_the_reference_is_not_its_work(self):
        """The reference's work is a convolution and an add; the candidate's add is on the 64
        BatchNorm parameters: not every kernel of the reference's is launched on its work."""
        ref = {CONV: 120.0, ADD: 12.0}
        cand, elements = resnet_block()
        v = own_kernel.judge([("c", cand, ref)], {OWN}, work={"c": (elements, ACTIVATION)})
        self.assertTrue(v["ok"], v["detail"])
        self.assertFalse(own_kernel.judge([("c", cand, ref)], {OWN})["ok"])

    def test_a_kernel_no_operator_owns_counts_as_work(self):
        cand = {CONV: 100.0, ADD: 40.0, RSQRT: 30.0, OWN: 5.0}
        v = own_kernel.judge([("c", cand, REFERENCE)], {OWN}, work={"c": ({RSQRT: 64}, ACTIVATION)})
        self.assertFalse(v["ok"])  # ADD unmeasured: the rule is not more lenient for it
        self.assertIn("CUDAFunctor_add", v["detail"])

    def test_the_threshold(self):
        cutoff = int(work.ACTIVATION_FRACTION * ACTIVATION)
        cand = {ADD: 40.0, OWN: 5.0}
        short = own_kernel._short
        below = work.torch_work("c", cand, {ADD}, 5.0, {ADD}, {ADD: cutoff - 1}, ACTIVATION, short)
        at = work.torch_work("c", cand, {ADD}, 5.0, {ADD}, {ADD: cutoff}, ACTIVATION, short)
        self.assertIsNone(below)
        self.assertIsNotNone(at)


class ProfilerEventsTest(unittest.TestCase):
    """kernel_elements on this torch's own profiler events (FunctionEvent: input_shapes with
    record_shapes, kernels attached with append_kernel, as _parse_kineto_results attaches a
    CUDA kernel to the operator that launched it)."""

    def test_a_kernel_is_measured_by_its_operators_inputs(self):
        x, w = torch.randn(8, 64, 14, 14), torch.randn(64)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            torch.rsqrt(w + 1e-5)
            torch.relu(x)
        events = list(prof.events())
        adds = [e for e in events if e.name == "aten::add"]
        relus = [e for e in events if e.name in ("aten::relu", "aten::clamp_min")]
        self.assertTrue(adds and relus, [e.name for e in events])
        adds[0].append_kernel(ADD, 0, 3)
        relus[0].append_kernel(RELU, 0, 9)
        got = work.kernel_elements(events)
        self.assertEqual(got, {ADD: 64, RELU: 8 * 64 * 14 * 14})

    def test_no_gpu_no_shapes(self):
        self.assertIsNone(work.profile_elements(lambda: torch.ones(2) + 1))

    def test_elements_of_scalars_and_shapes(self):
        self.assertEqual(work.elements_of([[4, 8], [], [8]]), 32)
        self.assertEqual(work.elements_of([]), 0)
        ev = types.SimpleNamespace(kernels=[], input_shapes=[[4]])
        self.assertEqual(work.kernel_elements([ev]), {})


if __name__ == "__main__":
    unittest.main()
