# Correct (expect pass, check bench). kernels/gemm_bias_relu, .py candidate with load_inline (issue 18.9).
# What it is: the GEMM through torch.matmul (cuBLAS), the bias and the ReLU fused in one own
# kernel, in place on the GEMM's output (the candidate's own temporary).
# Why unusual: the static check used to refuse a call of torch.matmul, "which the reference
# computes with". The trace shows the library does the GEMM and the candidate's own kernel
# replaces the reference's bias add and ReLU: it passes with its library share.
# What the verifier must say: passed, with kernelShares.library most of its GPU time (the
# check own-kernel-ran names the cuBLAS kernels); TF32 stays off (the harness's setting), so
# the GEMM is exact fp32; then benchmarked.
import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_inplace(float* __restrict__ y, const float* __restrict__ b, int64_t total, int64_t N) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = y[i] + b[i % N];
    y[i] = v > 0.f ? v : 0.f;
  }
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor b) {
  TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.scalar_type() == torch::kFloat32, "contiguous CUDA float32 y");
  auto bc = b.contiguous();
  const int64_t total = y.numel(), N = y.size(-1);
  if (total == 0) return y;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 65535LL * 8);
  bias_relu_inplace<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), bc.data_ptr<float>(), total, N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evkc_gemm_own_epilogue_17",
    cpp_sources="torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor b);",
    cuda_sources=_CUDA_SRC,
    functions=["bias_relu_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def forward(A, W, b):
    y = torch.matmul(A, W.t()).contiguous()
    return _ext.bias_relu_(y, b)
