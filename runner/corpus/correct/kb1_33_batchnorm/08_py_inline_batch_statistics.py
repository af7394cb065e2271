# Correct (expect pass, check bench). KernelBench level 1, 33_BatchNorm
# (task "shared:kernelbench/KernelBench/level1/33_BatchNorm.py"), .py candidate:
# `class ModelNew` holding the same nn.BatchNorm2d (bn.weight, bn.bias), its kernels built
# with load_inline.
# What it is: BatchNorm as KernelBench runs it: the Model as constructed, in training mode,
# normalising with the batch's statistics. Two kernels of its own: per-channel sums and sums
# of squares over N*H*W, in fp64 (one block per (channel, slice of planes), atomics into
# fp64 accumulators: no digits lost to a common offset), then
#     y = (x - mean[c]) * weight[c] / sqrt(var[c] + eps) + bias[c]
# with the biased variance, as BatchNorm normalises. The per-channel scale is a C-element
# vector computed on the HOST SIDE with torch ops (tiny kernels on 64 values).
# Why unusual: torch ops on small per-channel vectors in forward look like "falling back to
# PyTorch", but the O(N*C*H*W) work is the candidate's own. (The running statistics are not
# updated: KernelBench compares outputs only.)
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
bn_channel_sums(const float* __restrict__ x, double* __restrict__ sums, int64_t N, int64_t C, int64_t S) {
  const int64_t c = blockIdx.x;
  double s = 0.0, q = 0.0;
  for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
    const float* xp = x + (n * C + c) * S;
    for (int64_t i = threadIdx.x; i < S; i += THREADS) {
      const double v = (double)xp[i];
      s += v;
      q += v * v;
    }
  }
  __shared__ double sh_s[THREADS / 32], sh_q[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { sh_s[warp] = s; sh_q[warp] = q; }
  __syncthreads();
  if (warp == 0) {
    s = lane < THREADS / 32 ? sh_s[lane] : 0.0;
    q = lane < THREADS / 32 ? sh_q[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
      s += __shfl_xor_sync(0xffffffffu, s, o);
      q += __shfl_xor_sync(0xffffffffu, q, o);
    }
    if (lane == 0) {
      atomicAdd(&sums[2 * c], s);
      atomicAdd(&sums[2 * c + 1], q);
    }
  }
}

__global__ void __launch_bounds__(THREADS)
bn_normalise_planes(const float* __restrict__ x, const double* __restrict__ sums, const float* __restrict__ scale,
                    const float* __restrict__ bias, float* __restrict__ y, int64_t planes, int64_t C, int64_t S,
                    double count) {
  for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const int64_t c = p % C;
    const double mean = sums[2 * c] / count;
    const double var = fmax(sums[2 * c + 1] / count - mean * mean, 0.0);
    const float k = (float)((double)scale[c] * rsqrt(var + (double)scale[C + c]));
    const float m = (float)mean, b = bias[c];
    const float* xp = x + p * S;
    float* yp = y + p * S;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < S; i += (int64_t)gridDim.x * THREADS)
      yp[i] = (xp[i] - m) * k + b;
  }
}

torch::Tensor bn_train_fwd(torch::Tensor x, torch::Tensor weight_eps, torch::Tensor bias) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 2, "CUDA float32 [N, C, ...] expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t N = xc.size(0), C = xc.size(1);
  if (xc.numel() == 0) return y;
  const int64_t S = xc.numel() / (N * C);
  auto stream = at::cuda::getCurrentCUDAStream();
  auto sums = torch::zeros({2 * C}, xc.options().dtype(torch::kFloat64));
  const int64_t slices = N < 64 ? N : 64;
  bn_channel_sums<<<dim3((unsigned)C, (unsigned)slices), THREADS, 0, stream>>>(
      xc.data_ptr<float>(), sums.data_ptr<double>(), N, C, S);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  int64_t gx = (S + THREADS - 1) / THREADS;
  if (gx > 1024) gx = 1024;
  const int64_t planes = N * C;
  const int64_t gy = planes < 65535 ? planes : 65535;
  bn_normalise_planes<<<dim3((unsigned)gx, (unsigned)gy), THREADS, 0, stream>>>(
      xc.data_ptr<float>(), sums.data_ptr<double>(), weight_eps.data_ptr<float>(), bias.contiguous().data_ptr<float>(),
      y.data_ptr<float>(), planes, C, S, (double)(N * S));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evkc_kb1_33_batchnorm_batch_stats_08",
    cpp_sources="torch::Tensor bn_train_fwd(torch::Tensor x, torch::Tensor weight_eps, torch::Tensor bias);",
    cuda_sources=_CUDA_SRC,
    functions=["bn_train_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        # host side: the weights and eps as one 2C vector (the kernel reads eps per channel)
        weight_eps = torch.cat([bn.weight.detach().float(), torch.full_like(bn.weight.detach().float(), bn.eps)])
        return _ext.bn_train_fwd(x, weight_eps.contiguous(), bn.bias.detach())
