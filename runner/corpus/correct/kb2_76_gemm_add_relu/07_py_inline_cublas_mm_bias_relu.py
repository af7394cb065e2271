# Correct (expect pass, check bench). KernelBench level 2, 76_Gemm_Add_ReLU
# (task "shared:kernelbench/KernelBench/level2/76_Gemm_Add_ReLU.py"), .py candidate:
# `class ModelNew` with the Model's __init__ signature and parameter names (gemm.weight,
# bias), its CUDA code built with torch.utils.cpp_extension.load_inline.
# What it is: x @ W^T through cuBLAS (at::mm, fp32, TF32 off), then one own kernel that
# adds the bias and applies ReLU in place on the product (one thread per element of a
# row tile: blockIdx.y walks rows, blockIdx.x columns, so no modulo; int64 offsets).
# Why unusual: the GEMM is a library call; the candidate's own work is the fused epilogue.
# The harness derives odd sizes (e.g. 769 x 6145 x 6145) and signed, mixed-scale inputs:
# nothing here depends on the declared 1024 x 8192 x 8192.
# What the verifier must say: passed on every derived configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
add_bias_relu_rows(float* __restrict__ y, const float* __restrict__ b, int64_t M, int64_t N) {
  const int64_t n = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (n >= N) return;
  const float bn = b[n];
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const float v = y[m * N + n] + bn;
    y[m * N + n] = (v > 0.f || isnan(v)) ? v : 0.f;
  }
}

torch::Tensor gemm_add_relu_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
              b.scalar_type() == torch::kFloat32, "float32 tensors expected");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1, "x [M, K], w [N, K], b [N] expected");
  TORCH_CHECK(x.size(1) == w.size(1) && b.size(0) == w.size(0), "shape mismatch");
  auto bc = b.contiguous();
  auto y = at::mm(x, w.t()).contiguous();
  const int64_t M = y.size(0), N = y.size(1);
  if (M == 0 || N == 0) return y;
  const int64_t gx = (N + THREADS - 1) / THREADS;
  const int64_t gy = M < 65535 ? M : 65535;
  TORCH_CHECK(gx <= 0x7fffffffLL, "too many columns");
  add_bias_relu_rows<<<dim3((unsigned)gx, (unsigned)gy), THREADS>>>(y.data_ptr<float>(), bc.data_ptr<float>(), M, N);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "add_bias_relu_rows launch failed: ", cudaGetErrorString(err));
  return y;
}
"""

_CPP_SRC = "torch::Tensor gemm_add_relu_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

_ext = load_inline(
    name="evkc_kb2_76_gemm_add_relu_07",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["gemm_add_relu_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return _ext.gemm_add_relu_fwd(x, self.gemm.weight, self.bias)
