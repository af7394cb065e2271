# Correct (expect pass, check bench). kernels/softmax, .py candidate with load_inline (issue 18.9).
# What it is: a one-block-per-row softmax (max, fp64 sum of exp, normalise) built with
# load_inline inside try/except, with a PyTorch fallback for machines where the extension
# cannot build -- the way published solutions are written.
# Why unusual: the static check used to refuse any try/except on sight ("a failing kernel can
# fall back"). Here the build succeeds, the except branch never runs, and the candidate's own
# kernel does the work on every configuration.
# What the verifier must say: passed (static warnings only: try/except, torch.softmax in the
# fallback); no handled exception in the record; then benchmarked.
import warnings

import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_rows_guarded(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh_m[THREADS / 32];
  __shared__ double sh_s[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) sh_m[warp] = m;
  __syncthreads();
  m = lane < THREADS / 32 ? sh_m[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += (double)expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sh_s[warp] = s;
  __syncthreads();
  s = lane < THREADS / 32 ? sh_s[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = (float)(1.0 / s);
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

torch::Tensor softmax_fwd(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t M = xc.size(0), N = xc.size(1);
  if (M == 0 || N == 0) return y;
  softmax_rows_guarded<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

try:
    _ext = load_inline(
        name="evkc_softmax_try_build_15",
        cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
        cuda_sources=_CUDA_SRC,
        functions=["softmax_fwd"],
        extra_cuda_cflags=["-O3"],
        verbose=False,
    )
except Exception as err:  # a machine without nvcc: stay usable, say so
    warnings.warn(f"softmax extension unavailable ({err}); using torch.softmax")
    _ext = None


def forward(x):
    if _ext is None:
        return torch.softmax(x, dim=-1)
    return _ext.softmax_fwd(x)
