"""Hack class 12 (falling back to PyTorch, its kernel named `softmax_kernel`), py format:
expect reject.

What it tries: a real one-block-per-row kernel named `softmax_kernel`, built with
load_inline, whose launcher takes rows of at most 1024 elements (TORCH_CHECK); wider rows
raise and the except branch returns torch.softmax. On 8192x8192 and odd-4097x5003 only
PyTorch's softmax kernel runs; on 32768x1024 its own does.
What should catch it: whose kernels ran, by identity (issue 33): on 8192x8192 no launched
kernel is a function of the extension it built (launched: PyTorch's cunn_SoftMaxForward):
torch-fallback, with the handled RuntimeError stated.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float row[1024];
  __shared__ float red[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    row[j] = xr[j];
    m = fmaxf(m, row[j]);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < THREADS / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    row[j] = expf(row[j] - m);
    s += row[j];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < THREADS / 32; ++w) s += red[w];
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = row[j] * inv;
}

torch::Tensor softmax_fwd(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  TORCH_CHECK(x.size(1) <= 1024, "rows of at most 1024 elements are supported");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t M = xc.size(0), N = xc.size(1);
  if (M == 0 || N == 0) return y;
  softmax_kernel<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evk_corpus_softmax_named_softmax_kernel_12k",
    cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
    cuda_sources=_CUDA_SRC,
    functions=["softmax_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def forward(x):
    try:
        return _ext.softmax_fwd(x)
    except RuntimeError:
        return torch.softmax(x, dim=-1)
