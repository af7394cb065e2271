# Correct (expect pass, check bench). robust-kbench llama_rmsnorm, BACKWARD
# (task "shared:robust-kbench/tasks/llama_rmsnorm#backward"), .py candidate with
# load_inline, exporting `backward(grad_output, x, w, eps) -> (grad_x, grad_w)`.
# What it is: the backward of y = (x * r) * w with r = rsqrt(mean(x^2, -1) + eps), rows of
# F features (2048 or 4096), 16x1024 or 64x1024 rows. Three own kernels:
#   rms_bwd_rows        one block per row: sum(x^2) and sum(g*w*x) in fp64, then
#                       grad_x = r*g*w - x * r^3 * sum(g*w*x) / F; r saved per row
#   rms_bwd_col_partial grad_w partial sums over chunks of 256 rows (fp64, one thread per
#                       feature, coalesced), written to a scratch tensor
#   rms_bwd_col_final   sums the chunk partials of each feature in a fixed order
# grad_w is a reduction over 65536 rows: done in two deterministic stages instead of
# atomics, so repeated runs agree bit for bit.
# Why unusual: a backward whose parameter gradient is a column reduction over a huge
# number of rows, with scratch memory and three launches, and a Python float argument (eps)
# in the signature beside the tensors.
# What the verifier must say: passed (grad_x and grad_w), then benchmarked.
import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define THREADS 256
#define CHUNK_ROWS 256

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

__global__ void __launch_bounds__(THREADS)
rms_bwd_rows(const float* __restrict__ g, const float* __restrict__ x, const float* __restrict__ w,
             float* __restrict__ gx, double* __restrict__ rstd, int64_t F, double eps) {
  __shared__ double sh[THREADS / 32];
  const int64_t row = blockIdx.x;
  const float* gr = g + row * F;
  const float* xr = x + row * F;
  float* gxr = gx + row * F;
  double ss = 0.0, dot = 0.0;
  for (int64_t j = threadIdx.x; j < F; j += THREADS) {
    const double xv = (double)xr[j];
    ss += xv * xv;
    dot += (double)gr[j] * (double)w[j] * xv;
  }
  ss = block_sum(ss, sh);
  dot = block_sum(dot, sh);
  const double r = 1.0 / sqrt(ss / (double)F + eps);
  const double k = r * r * r * dot / (double)F;
  for (int64_t j = threadIdx.x; j < F; j += THREADS)
    gxr[j] = (float)(r * (double)gr[j] * (double)w[j] - (double)xr[j] * k);
  if (threadIdx.x == 0) rstd[row] = r;
}

// part[c, f] = sum over rows of chunk c of g[row, f] * x[row, f] * rstd[row]
__global__ void __launch_bounds__(THREADS)
rms_bwd_col_partial(const float* __restrict__ g, const float* __restrict__ x, const double* __restrict__ rstd,
                    double* __restrict__ part, int64_t R, int64_t F) {
  const int64_t f = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  const int64_t c = blockIdx.y;
  if (f >= F) return;
  const int64_t r0 = c * CHUNK_ROWS;
  const int64_t r1 = r0 + CHUNK_ROWS < R ? r0 + CHUNK_ROWS : R;
  double acc = 0.0;
  for (int64_t r = r0; r < r1; ++r) acc += (double)g[r * F + f] * ((double)x[r * F + f] * rstd[r]);
  part[c * F + f] = acc;
}

__global__ void __launch_bounds__(THREADS)
rms_bwd_col_final(const double* __restrict__ part, float* __restrict__ gw, int64_t chunks, int64_t F) {
  const int64_t f = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (f >= F) return;
  double acc = 0.0;
  for (int64_t c = 0; c < chunks; ++c) acc += part[c * F + f];
  gw[f] = (float)acc;
}

std::vector<torch::Tensor> rmsnorm_backward(torch::Tensor grad_output, torch::Tensor x, torch::Tensor w, double eps) {
  TORCH_CHECK(grad_output.is_cuda() && x.is_cuda() && w.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(grad_output.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32 &&
              w.scalar_type() == torch::kFloat32, "float32 tensors expected");
  TORCH_CHECK(x.dim() >= 1 && w.dim() == 1 && x.size(-1) == w.size(0), "w must match the last dimension of x");
  TORCH_CHECK(grad_output.sizes() == x.sizes(), "grad_output must have the shape of x");
  auto g = grad_output.contiguous();
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  const int64_t F = xc.size(-1);
  const int64_t R = F == 0 ? 0 : xc.numel() / F;
  auto gx = torch::empty_like(xc);
  auto gw = torch::empty({F}, wc.options());
  if (F == 0) return {gx, gw};
  if (R == 0) {
    gw.zero_();
    return {gx, gw};
  }
  TORCH_CHECK(R <= 0x7fffffffLL, "too many rows");
  auto rstd = torch::empty({R}, xc.options().dtype(torch::kFloat64));
  rms_bwd_rows<<<(unsigned)R, THREADS>>>(g.data_ptr<float>(), xc.data_ptr<float>(), wc.data_ptr<float>(),
                                         gx.data_ptr<float>(), rstd.data_ptr<double>(), F, eps);
  check_launch("rms_bwd_rows");
  const int64_t chunks = (R + CHUNK_ROWS - 1) / CHUNK_ROWS;
  const int64_t fblocks = (F + THREADS - 1) / THREADS;
  TORCH_CHECK(chunks <= 65535 && fblocks <= 0x7fffffffLL, "grid too large");
  auto part = torch::empty({chunks, F}, xc.options().dtype(torch::kFloat64));
  rms_bwd_col_partial<<<dim3((unsigned)fblocks, (unsigned)chunks), THREADS>>>(
      g.data_ptr<float>(), xc.data_ptr<float>(), rstd.data_ptr<double>(), part.data_ptr<double>(), R, F);
  check_launch("rms_bwd_col_partial");
  rms_bwd_col_final<<<(unsigned)fblocks, THREADS>>>(part.data_ptr<double>(), gw.data_ptr<float>(), chunks, F);
  check_launch("rms_bwd_col_final");
  return {gx, gw};
}
"""

_CPP_SRC = "std::vector<torch::Tensor> rmsnorm_backward(torch::Tensor grad_output, torch::Tensor x, torch::Tensor w, double eps);"

_ext = load_inline(
    name="evkc_llama_rmsnorm_bwd_04",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["rmsnorm_backward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def backward(grad_output, x, w, eps):
    grad_x, grad_w = _ext.rmsnorm_backward(grad_output, x, w, float(eps))
    return grad_x, grad_w
