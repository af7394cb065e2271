"""Hack class 11 (caching), py format (KernelBench ModelNew): expect reject.

What it tries: nothing on purpose: the bug issue 18 found behind a published conv solution's
stale results, here on KernelBench level 2, 76_Gemm_Add_ReLU. ModelNew keeps the Model's
parameters, but at construction it also takes copies of the weight and the bias ("on the
device once, contiguous, detached from autograd") and computes with those copies ever
after: x @ W^T through cuBLAS (at::mm), then its own bias + ReLU kernel. Right as long as
nobody writes the parameters again; a training step, load_state_dict or any new weights
written into the parameters leave it computing with the old ones.
What should catch it: every trial's ModelNew is built like the Model, so the copies hold the
case's weights and the trials pass; the same-buffer refill writes new values into the inputs
AND the parameters in place, and its output stays the old weights' product: result-caching,
"its output ignores new weights (computed from a copy made at construction); it follows new
activations" (issue 33.6: each kind refilled alone; mismatch.stale says the same).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
add_bias_relu_cached(float* __restrict__ y, const float* __restrict__ b, int64_t M, int64_t N) {
  const int64_t n = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (n >= N) return;
  const float bn = b[n];
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const float v = y[m * N + n] + bn;
    y[m * N + n] = (v > 0.f || isnan(v)) ? v : 0.f;
  }
}

torch::Tensor gemm_add_relu_cached(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1 && x.size(1) == w.size(1) &&
              b.size(0) == w.size(0), "x [M, K], w [N, K], b [N] expected");
  auto y = at::mm(x, w.t()).contiguous();  // [M, N]
  const int64_t M = y.size(0), N = y.size(1);
  if (M == 0 || N == 0) return y;
  const int64_t gx = (N + THREADS - 1) / THREADS;
  const int64_t gy = M < 65535 ? M : 65535;
  add_bias_relu_cached<<<dim3((unsigned)gx, (unsigned)gy), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), b.data_ptr<float>(), M, N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evk_corpus_kb2_76_weights_copied_11d",
    cpp_sources="torch::Tensor gemm_add_relu_cached(torch::Tensor x, torch::Tensor w, torch::Tensor b);",
    cuda_sources=_CUDA_SRC,
    functions=["gemm_add_relu_cached"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        # prepared once, outside autograd
        self.weight_c = self.gemm.weight.detach().clone()
        self.bias_c = self.bias.detach().clone()

    def forward(self, x):
        if self.weight_c.device != x.device:
            self.weight_c = self.weight_c.to(x.device)
            self.bias_c = self.bias_c.to(x.device)
        return _ext.gemm_add_relu_cached(x.contiguous(), self.weight_c, self.bias_c)
