# Correct (expect pass, check bench). KernelBench level 1, 34_InstanceNorm
# (task "shared:kernelbench/KernelBench/level1/34_InstanceNorm.py"), .py candidate:
# `ModelNew` (nn.InstanceNorm2d defaults: no affine parameters, no running statistics,
# eps 1e-5, biased variance) with a load_inline kernel.
# What it is: one 256-thread block per (n, c) plane of H*W elements. Each thread runs
# Welford's update (count, mean, M2) in fp64 over its strided elements; the partial
# states are merged with Chan's formula across the warp (shuffles) and across warps
# (shared memory); a second pass writes (x - mean) * rsqrt(var + eps).
# Why unusual: a stable, single-read variance (Welford) where a one-pass E[x^2] - E[x]^2
# would lose everything on planes with a large offset and a small spread — the verifier's
# signed, mixed-scale inputs must find nothing wrong here. Odd planes (H*W = 385*385 ...)
# and odd channel counts from the derived configurations work: no size assumptions.
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

struct Welford {
  double n, mean, m2;
};

__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
  const double n = a.n + b.n;
  if (n == 0.0) return a;
  const double d = b.mean - a.mean;
  const double fb = b.n / n;
  Welford r;
  r.n = n;
  r.mean = a.mean + d * fb;
  r.m2 = a.m2 + b.m2 + d * d * a.n * fb;
  return r;
}

__device__ __forceinline__ Welford shfl_welford(Welford w, int o) {
  Welford r;
  r.n = __shfl_xor_sync(0xffffffffu, w.n, o);
  r.mean = __shfl_xor_sync(0xffffffffu, w.mean, o);
  r.m2 = __shfl_xor_sync(0xffffffffu, w.m2, o);
  return r;
}

__global__ void __launch_bounds__(THREADS)
instancenorm_welford(const float* __restrict__ x, float* __restrict__ y, int64_t S, double eps) {
  __shared__ Welford sh[THREADS / 32];
  __shared__ double sh_stats[2];
  const float* xp = x + (int64_t)blockIdx.x * S;
  float* yp = y + (int64_t)blockIdx.x * S;
  Welford w = {0.0, 0.0, 0.0};
  for (int64_t i = threadIdx.x; i < S; i += THREADS) {
    const double v = (double)xp[i];
    w.n += 1.0;
    const double d = v - w.mean;
    w.mean += d / w.n;
    w.m2 += d * (v - w.mean);
  }
  for (int o = 16; o > 0; o >>= 1) w = welford_merge(w, shfl_welford(w, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = w;
  __syncthreads();
  if (threadIdx.x == 0) {
    Welford t = sh[0];
    for (int k = 1; k < THREADS / 32; ++k) t = welford_merge(t, sh[k]);
    sh_stats[0] = t.mean;
    sh_stats[1] = 1.0 / sqrt(t.m2 / t.n + eps);  // biased variance, as instance_norm
  }
  __syncthreads();
  const double mean = sh_stats[0], rstd = sh_stats[1];
  for (int64_t i = threadIdx.x; i < S; i += THREADS) yp[i] = (float)(((double)xp[i] - mean) * rstd);
}

torch::Tensor instancenorm_fwd(torch::Tensor x, double eps) {
  TORCH_CHECK(x.is_cuda(), "CUDA tensor expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
  TORCH_CHECK(x.dim() >= 3, "x must be [N, C, spatial...]");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t planes = xc.size(0) * xc.size(1);
  if (xc.numel() == 0) return y;
  const int64_t S = xc.numel() / planes;
  TORCH_CHECK(planes <= 0x7fffffffLL, "too many planes");
  instancenorm_welford<<<(unsigned)planes, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), S, eps);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "instancenorm_welford launch failed: ", cudaGetErrorString(err));
  return y;
}
"""

_CPP_SRC = "torch::Tensor instancenorm_fwd(torch::Tensor x, double eps);"

_ext = load_inline(
    name="evkc_kb1_34_instancenorm_12",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["instancenorm_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = 1e-5  # nn.InstanceNorm2d's default

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.instancenorm_fwd(x, self.eps)
