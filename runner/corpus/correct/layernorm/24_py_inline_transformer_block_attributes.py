# Correct (expect pass, check bench). kernels/layernorm, .py candidate with load_inline (issue 33.3).
# What it is: the pre-norm stage of a transformer block as a team writes it: an nn.Module
# whose __init__ sets `self.norm` (its own LayerNorm module, backed by its own kernel),
# `self.max_len`, `self.time_embed` (a timestep embedding, unused without a timestep) and
# `self.record` (the shapes it saw, for debugging); its own one-block-per-row kernel (fp64
# mean, then fp64 sum of squared deviations) does the layer norm.
# Why unusual: the static check used to refuse `self.norm = …` as timer-patching ("replaces
# self.norm: timers and checks must stay the harness's own"): the assignment rule matched the
# attribute's name (norm, max, time, record, …) whatever object it belonged to. An attribute
# of the candidate's own objects is its own business; only replacing an attribute of torch,
# time, numpy, triton, builtins or the harness refuses on sight.
# What the verifier must say: passed, with no timer-patching finding at all; then benchmarked.
import collections

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__device__ double block_sum(double v, double* red, double* out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? red[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) *out = v;
  }
  __syncthreads();
  const double total = *out;
  __syncthreads();  // red and out are reused by the next reduction
  return total;
}

__global__ void __launch_bounds__(THREADS)
layer_norm_rows(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                float* __restrict__ y, int64_t N, float eps) {
  __shared__ double red[THREADS / 32];
  __shared__ double out;
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += (double)xr[j];
  const double mean = block_sum(s, red, &out) / (double)N;
  double v = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    const double d = (double)xr[j] - mean;
    v += d * d;
  }
  const double var = block_sum(v, red, &out) / (double)N;
  const double rstd = 1.0 / sqrt(var + (double)eps);
  for (int64_t j = threadIdx.x; j < N; j += THREADS)
    yr[j] = (float)(((double)xr[j] - mean) * rstd) * w[j] + b[j];
}

torch::Tensor layer_norm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  auto bc = b.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t M = xc.size(0), N = xc.size(1);
  if (M == 0 || N == 0) return y;
  layer_norm_rows<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), N, (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evkc_layernorm_transformer_block_24",
    cpp_sources="torch::Tensor layer_norm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);",
    cuda_sources=_CUDA_SRC,
    functions=["layer_norm_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class FusedLayerNorm(nn.Module):
    """LayerNorm over the last dimension with its own kernel; the affine parameters may be
    given per call (the task passes them)."""

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x, weight=None, bias=None):
        w = self.weight if weight is None else weight
        b = self.bias if bias is None else bias
        return _ext.layer_norm_fwd(x, w, b, self.eps)


class PreNormBlock(nn.Module):
    """A transformer block's pre-norm stage: norm, then (with a timestep) its embedding added."""

    def __init__(self, d=None, max_len=1 << 20, eps=1e-5):
        super().__init__()
        self.norm = FusedLayerNorm(d or 1, eps)
        self.max_len = max_len
        self.time_embed = nn.Embedding(16, d or 1)
        self.record = collections.deque(maxlen=8)

    def forward(self, x, weight=None, bias=None, t=None):
        if x.shape[0] > self.max_len:
            raise ValueError(f"{x.shape[0]} rows: this block takes at most {self.max_len}")
        self.record.append(tuple(x.shape))
        h = self.norm(x, weight, bias)
        if t is not None:
            h = h + self.time_embed(t)
        return h


_block = PreNormBlock()


def forward(x, weight, bias):
    return _block(x, weight, bias)
