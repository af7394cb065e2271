# Correct (expect pass, check bench). KernelBench level 1, 36_RMSNorm_
# (task "shared:kernelbench/KernelBench/level1/36_RMSNorm_.py"), .py candidate: `ModelNew`
# with the Model's __init__(num_features, eps=1e-5) and a load_inline kernel.
# What it is: x / sqrt(mean(x^2, dim=1) + eps) for x [B, C, *]: the reduction runs over
# the CHANNEL dimension, whose elements are H*W apart. One thread per (b, spatial)
# position walks the C channels (consecutive threads read consecutive positions:
# coalesced), sums squares in fp64, rounds the mean to fp32 as torch does, and divides.
# Grid-stride over B*H*W positions with int64 offsets (the declared input has 1.9e9
# elements).
# Why unusual: a strided (non-last-dimension) reduction, and a problem whose derived
# configurations vary the channel count too (64 -> odd values such as 49 or 19): nothing
# assumes C = 64 or H*W a multiple of anything. Small derived shapes are launch-bound.
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
rmsnorm_over_channels(const float* __restrict__ x, float* __restrict__ y, int64_t positions, int64_t C,
                      int64_t S, float eps) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  for (int64_t p = (int64_t)blockIdx.x * THREADS + threadIdx.x; p < positions; p += stride) {
    const int64_t b = p / S, s = p - b * S;
    const int64_t base = b * C * S + s;
    double acc = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double v = (double)x[base + c * S];
      acc += v * v;
    }
    const float ms = (float)(acc / (double)C);
    const float rms = sqrtf(ms + eps);
    for (int64_t c = 0; c < C; ++c) y[base + c * S] = x[base + c * S] / rms;
  }
}

torch::Tensor rmsnorm_dim1_fwd(torch::Tensor x, double eps) {
  TORCH_CHECK(x.is_cuda(), "CUDA tensor expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
  TORCH_CHECK(x.dim() >= 2, "x must be [B, C, ...]");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t B = xc.size(0), C = xc.size(1);
  if (xc.numel() == 0) return y;
  const int64_t S = xc.numel() / (B * C);
  const int64_t positions = B * S;
  int64_t blocks = (positions + THREADS - 1) / THREADS;
  if (blocks > 65536) blocks = 65536;
  rmsnorm_over_channels<<<(unsigned)blocks, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), positions, C, S,
                                                        (float)eps);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "rmsnorm_over_channels launch failed: ", cudaGetErrorString(err));
  return y;
}
"""

_CPP_SRC = "torch::Tensor rmsnorm_dim1_fwd(torch::Tensor x, double eps);"

_ext = load_inline(
    name="evkc_kb1_36_rmsnorm_11",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["rmsnorm_dim1_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm_dim1_fwd(x, float(self.eps))
