# Correct (expect pass, check bench). KernelBench level 1, 23_Softmax
# (task "shared:kernelbench/KernelBench/level1/23_Softmax.py"), .py candidate: `ModelNew`
# with a load_inline kernel.
# What it is: torch.softmax(x, dim=1) on a 2-D input, one 512-thread block per row and
# three passes over the row: the maximum, the sum of exp(x - max) (fp64 accumulators per
# thread and in the block tree), then y = exp(x - max) / sum. Rows of any width (odd ones,
# 1 included), any number of rows (grid.y-free: blockIdx.x is the row, up to 2^31 - 1).
# Why unusual: the declared rows are 393216 wide, but the derived "small-odd-sizes"
# configuration and the held-out one are much smaller, and a problem with small rows is
# launch-bound; the kernel must be judged correct on all of them (and timed where the
# harness can time it).
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 512

__global__ void __launch_bounds__(THREADS)
softmax_rows_three_pass(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
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

torch::Tensor softmax_dim1_fwd(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "CUDA tensor expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
  TORCH_CHECK(x.dim() == 2, "softmax over dim 1 of a 2-D tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t M = xc.size(0), N = xc.size(1);
  if (M == 0 || N == 0) return y;
  TORCH_CHECK(M <= 0x7fffffffLL, "too many rows");
  softmax_rows_three_pass<<<(unsigned)M, THREADS>>>(xc.data_ptr<float>(), y.data_ptr<float>(), N);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "softmax_rows_three_pass launch failed: ", cudaGetErrorString(err));
  return y;
}
"""

_CPP_SRC = "torch::Tensor softmax_dim1_fwd(torch::Tensor x);"

_ext = load_inline(
    name="evkc_kb1_23_softmax_10",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["softmax_dim1_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_dim1_fwd(x)
