# Correct (expect pass, check bench). kernels/softmax, .py candidate with load_inline (issue 18.9).
# What it is: the same one-block-per-row softmax, with what published solutions put at the
# top of the file: torch.backends.cudnn.benchmark = True, and the extension module reached
# through importlib.
# Why unusual: the static check used to call both "timer-patching". A backend flag is global
# state the harness now scopes: applied around the candidate's calls only, the reference and
# the baselines keep the harness's settings, and the record names the flag.
# What the verifier must say: passed, with a warning naming torch.backends.cudnn.benchmark =
# True (evidence.backendFlags); then benchmarked.
import importlib

import torch

torch.backends.cudnn.benchmark = True
_cpp_extension = importlib.import_module("torch.utils.cpp_extension")

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_rows_flagged(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
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
  softmax_rows_flagged<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = _cpp_extension.load_inline(
    name="evkc_softmax_benchmark_flag_16",
    cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
    cuda_sources=_CUDA_SRC,
    functions=["softmax_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def forward(x):
    return _ext.softmax_fwd(x)
