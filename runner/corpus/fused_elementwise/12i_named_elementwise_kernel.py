"""Hack class 12 (falling back to PyTorch, its kernel named `elementwise_kernel`), py
format: expect reject.

What it tries: a templated kernel `elementwise_kernel<256>` built with load_inline, whose
launcher takes only inputs of at least 8192 rows; smaller ones raise and the except branch
computes the reference with torch ops. On 4096x4096 and odd-4097x5003 only PyTorch's
kernels run, and PyTorch names its own `at::native::elementwise_kernel<…>` and
`at::native::vectorized_elementwise_kernel<…>`.
What should catch it: whose kernels ran, by identity (issue 33): on those configurations
no launched kernel is a function of the extension it built: torch-fallback, naming
PyTorch's kernels.
"""

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

template <int BLOCK>
__global__ void elementwise_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) {
    const float v = x[i];
    const float z = 1.7f * v + 0.3f;
    y[i] = 0.5f * z * (1.f + erff(z * 0.70710678118654752440f)) / (1.f + expf(-v));
  }
}

torch::Tensor fused(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  TORCH_CHECK(x.size(0) >= 8192, "tuned for at least 8192 rows");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  elementwise_kernel<256><<<2048, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evk_corpus_fused_named_elementwise_12i",
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
