# Correct (expect pass, check bench). KernelBench level 1, 33_BatchNorm
# (task "shared:kernelbench/KernelBench/level1/33_BatchNorm.py"), .py candidate:
# `class ModelNew` holding the same nn.BatchNorm2d (parameters bn.weight, bn.bias and the
# running statistics), its kernel built with load_inline.
# What it is: BatchNorm inference, the way the harness runs the reference (model.eval():
# running statistics, not batch statistics). The per-channel scale
#     scale = bn.weight * rsqrt(bn.running_var + bn.eps)
# is a C-element vector computed on the HOST SIDE with torch ops before the launch (a few
# tiny elementwise kernels on 64 values); the main work, over all N*C*H*W elements, is
# this file's own kernel:
#     y = (x - running_mean[c]) * scale[c] + bn.bias[c]
# (x - mean first, not x*scale + shift: no cancellation when the mean is large).
# One block row per (n, c) plane: blockIdx.y walks planes, so the channel is known per
# block and no per-element division is needed; planes of any size (odd H*W) work.
# Why unusual: torch ops on parameters in forward (the small per-channel vector) look
# like "falling back to PyTorch", but the O(N*C*H*W) work is the candidate's own kernel.
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
bn_affine_planes(const float* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ scale,
                 const float* __restrict__ shift, float* __restrict__ y, int64_t planes, int64_t C, int64_t S) {
  for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const int64_t c = p % C;
    const float m = mean[c], k = scale[c], sh = shift[c];
    const float* xp = x + p * S;
    float* yp = y + p * S;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < S; i += (int64_t)gridDim.x * THREADS)
      yp[i] = (xp[i] - m) * k + sh;
  }
}

torch::Tensor bn_infer_fwd(torch::Tensor x, torch::Tensor mean, torch::Tensor scale, torch::Tensor shift) {
  TORCH_CHECK(x.is_cuda() && mean.is_cuda() && scale.is_cuda() && shift.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && mean.scalar_type() == torch::kFloat32 &&
              scale.scalar_type() == torch::kFloat32 && shift.scalar_type() == torch::kFloat32,
              "float32 tensors expected");
  TORCH_CHECK(x.dim() >= 2, "x must be [N, C, ...]");
  const int64_t C = x.size(1);
  TORCH_CHECK(mean.numel() == C && scale.numel() == C && shift.numel() == C, "one value per channel");
  auto xc = x.contiguous();
  auto mc = mean.contiguous(), kc = scale.contiguous(), sc = shift.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t planes = xc.size(0) * C;
  if (planes == 0 || xc.numel() == 0) return y;
  const int64_t S = xc.numel() / planes;
  int64_t gx = (S + THREADS - 1) / THREADS;
  if (gx > 1024) gx = 1024;
  const int64_t gy = planes < 65535 ? planes : 65535;
  bn_affine_planes<<<dim3((unsigned)gx, (unsigned)gy), THREADS>>>(
      xc.data_ptr<float>(), mc.data_ptr<float>(), kc.data_ptr<float>(), sc.data_ptr<float>(),
      y.data_ptr<float>(), planes, C, S);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "bn_affine_planes launch failed: ", cudaGetErrorString(err));
  return y;
}
"""

_CPP_SRC = "torch::Tensor bn_infer_fwd(torch::Tensor x, torch::Tensor mean, torch::Tensor scale, torch::Tensor shift);"

_ext = load_inline(
    name="evkc_kb1_33_batchnorm_08",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["bn_infer_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        # host side: a per-channel vector of C values, computed with small torch ops
        scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        return _ext.bn_infer_fwd(x, bn.running_mean, scale, bn.bias)
