# Correct (expect pass, check bench). KernelBench level 1, 40_LayerNorm
# (task "shared:kernelbench/KernelBench/level1/40_LayerNorm.py"), .py candidate:
# `ModelNew` holding the same nn.LayerNorm (parameters ln.weight, ln.bias of the
# normalized shape) with a load_inline kernel.
# What it is: LayerNorm over the last three dimensions (64 x 256 x 256 = 4M elements per
# row, only 16 rows in the declared shape). Each row is split over many blocks and every
# reduction is finished by a second kernel, in fp64 and in a fixed order (no atomics):
#   ln_row_partial(mode 0) + ln_row_final -> mean
#   ln_row_partial(mode 1) + ln_row_final -> rstd from sum((x - mean)^2)   (two-pass: stable)
#   ln_apply    y = (x - mean) * rstd * weight + bias
# Why unusual: few, enormous rows (one block per row would use 16 SMs), a stable two-pass
# variance that signed, mixed-scale inputs with large offsets cannot break, and derived
# configurations with odd normalized shapes (e.g. 49 x 193 x 193) and a smaller batch.
# What the verifier must say: passed on every configuration, then benchmarked.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256
#define CHUNK 8192

static void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, what, " launch failed: ", cudaGetErrorString(err));
}

__device__ __forceinline__ double block_sum(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < THREADS / 32 ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// grid (chunks, R): part[r, c] = sum over chunk c of row r of x (mode 0) or (x - mean[r])^2 (mode 1)
__global__ void __launch_bounds__(THREADS)
ln_row_partial(const float* __restrict__ x, const double* __restrict__ mean, double* __restrict__ part,
               int64_t N, int64_t chunks, int mode) {
  __shared__ double sh[THREADS / 32];
  const int64_t r = blockIdx.y, c = blockIdx.x;
  const int64_t j0 = c * CHUNK;
  const int64_t j1 = j0 + CHUNK < N ? j0 + CHUNK : N;
  const float* xr = x + r * N;
  double a = 0.0;
  if (mode == 0) {
    for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) a += (double)xr[j];
  } else {
    const double m = mean[r];
    for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) {
      const double d = (double)xr[j] - m;
      a += d * d;
    }
  }
  a = block_sum(a, sh);
  if (threadIdx.x == 0) part[r * chunks + c] = a;
}

// one block per row. mode 0: out = sum / N. mode 1: out = 1 / sqrt(sum / N + eps).
__global__ void __launch_bounds__(THREADS)
ln_row_final(const double* __restrict__ part, double* __restrict__ out, int64_t chunks, int64_t N, double eps,
             int mode) {
  __shared__ double sh[THREADS / 32];
  const int64_t r = blockIdx.x;
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < chunks; c += THREADS) s += part[r * chunks + c];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) out[r] = mode == 0 ? s / (double)N : 1.0 / sqrt(s / (double)N + eps);
}

__global__ void __launch_bounds__(THREADS)
ln_apply(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
         const double* __restrict__ mean, const double* __restrict__ rstd, float* __restrict__ y, int64_t N) {
  const int64_t r = blockIdx.y, c = blockIdx.x;
  const int64_t j0 = c * CHUNK;
  const int64_t j1 = j0 + CHUNK < N ? j0 + CHUNK : N;
  const double m = mean[r], rs = rstd[r];
  const float* xr = x + r * N;
  float* yr = y + r * N;
  for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS)
    yr[j] = (float)(((double)xr[j] - m) * rs * (double)w[j] + (double)b[j]);
}

torch::Tensor layernorm_multiblock_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
              b.scalar_type() == torch::kFloat32, "float32 tensors expected");
  const int64_t k = w.dim();
  TORCH_CHECK(k >= 1 && k <= x.dim() && b.sizes() == w.sizes(), "weight and bias: the normalized shape");
  for (int64_t i = 0; i < k; ++i)
    TORCH_CHECK(x.size(x.dim() - k + i) == w.size(i), "x's trailing dimensions must be the normalized shape");
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  auto bc = b.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t N = wc.numel();
  if (N == 0 || xc.numel() == 0) return y;
  const int64_t R = xc.numel() / N;
  const int64_t chunks = (N + CHUNK - 1) / CHUNK;
  TORCH_CHECK(R <= 65535 && chunks <= 0x7fffffffLL, "too many rows for this kernel's grid");
  auto dopt = xc.options().dtype(torch::kFloat64);
  auto part = torch::empty({R, chunks}, dopt);
  auto mean = torch::empty({R}, dopt);
  auto rstd = torch::empty({R}, dopt);
  const dim3 grid((unsigned)chunks, (unsigned)R);
  ln_row_partial<<<grid, THREADS>>>(xc.data_ptr<float>(), nullptr, part.data_ptr<double>(), N, chunks, 0);
  check_launch("ln_row_partial(mean)");
  ln_row_final<<<(unsigned)R, THREADS>>>(part.data_ptr<double>(), mean.data_ptr<double>(), chunks, N, eps, 0);
  check_launch("ln_row_final(mean)");
  ln_row_partial<<<grid, THREADS>>>(xc.data_ptr<float>(), mean.data_ptr<double>(), part.data_ptr<double>(), N,
                                    chunks, 1);
  check_launch("ln_row_partial(var)");
  ln_row_final<<<(unsigned)R, THREADS>>>(part.data_ptr<double>(), rstd.data_ptr<double>(), chunks, N, eps, 1);
  check_launch("ln_row_final(rstd)");
  ln_apply<<<grid, THREADS>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(),
                              mean.data_ptr<double>(), rstd.data_ptr<double>(), y.data_ptr<float>(), N);
  check_launch("ln_apply");
  return y;
}
"""

_CPP_SRC = "torch::Tensor layernorm_multiblock_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

_ext = load_inline(
    name="evkc_kb1_40_layernorm_14",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["layernorm_multiblock_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_multiblock_fwd(x, self.ln.weight, self.ln.bias, float(self.ln.eps))
