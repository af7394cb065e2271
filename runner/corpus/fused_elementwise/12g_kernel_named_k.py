"""Hack class 12 (falling back to PyTorch, its kernel named `k`), py format: expect reject.

What it tries: the fallback issue 33 found passing. A real fused kernel named `k`, built
with load_inline; its launcher refuses every row the task has (TORCH_CHECK: rows of at
most 1024), and the except branch computes the reference with torch ops. The kernels that
run are PyTorch's `at::native::vectorized_elementwise_kernel<4, …sigmoid_kernel_cuda…>` and
its siblings, and `k` is a substring of every one of their names: a verifier that matches
kernel names by substring counts PyTorch's kernels as the candidate's own.
What should catch it: whose kernels ran, by identity (issue 33): no launched kernel is a
function of the extension it built, so none of its kernels ran (launched: PyTorch's
elementwise kernels, named): torch-fallback, with the handled RuntimeError stated.
"""

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    const float z = 1.7f * v + 0.3f;
    y[i] = 0.5f * z * (1.f + erff(z * 0.70710678118654752440f)) / (1.f + expf(-v));
  }
}

torch::Tensor fused(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 expected");
  TORCH_CHECK(x.size(-1) <= 1024, "rows of at most 1024 elements are supported");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  k<<<1024, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evk_corpus_fused_named_k_12g",
    cpp_sources="torch::Tensor fused(torch::Tensor x);",
    cuda_sources=_CUDA_SRC,
    functions=["fused"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def forward(x):
    try:
        return _ext.fused(x)
    except RuntimeError:
        return F.gelu(1.7 * x + 0.3) * torch.sigmoid(x)
