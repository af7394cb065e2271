// Correct (expect pass, check bench). kernels/rmsnorm_backward (a native backward task:
// the candidate computes backward(grad_y, x, w) -> (grad_x, grad_w) of
// y = x * rsqrt(mean(x^2, -1) + 1e-6) * w), torch-ext format exporting `backward`.
// What it is: a torch extension for a native backward task (the built-in baseline is in
// the evk format). Three own kernels:
//   rms_rows       one block per row: sum(x^2), sum(g*w*x) in fp64;
//                  grad_x = r*g*w - x * r^3 * sum(g*w*x) / N, r = rsqrt(mean(x^2) + 1e-6)
//   rms_col_part   grad_w partial sums over chunks of 128 rows, one thread per column
//   rms_col_final  the chunk partials of each column summed in a fixed order
// Why unusual: the torch-extension format on a native *backward* task (two outputs, one per
// input that requires a gradient), deterministic two-stage column reduction with fp64
// scratch; widths 5003, 999, 65537 (odd, and wider than any block).
// What the verifier must say: passed (grad_x and grad_w) on every configuration, then
// benchmarked.
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256
#define CHUNK_ROWS 128
#define EPS 1e-6

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
rms_rows(const float* __restrict__ g, const float* __restrict__ x, const float* __restrict__ w,
         float* __restrict__ gx, double* __restrict__ rstd, int64_t N) {
  __shared__ double sh[THREADS / 32];
  const int64_t row = blockIdx.x;
  const float* gr = g + row * N;
  const float* xr = x + row * N;
  float* gxr = gx + row * N;
  double ss = 0.0, dot = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    const double xv = (double)xr[j];
    ss += xv * xv;
    dot += (double)gr[j] * (double)w[j] * xv;
  }
  ss = block_sum(ss, sh);
  dot = block_sum(dot, sh);
  const double r = 1.0 / sqrt(ss / (double)N + EPS);
  const double k = r * r * r * dot / (double)N;
  for (int64_t j = threadIdx.x; j < N; j += THREADS)
    gxr[j] = (float)(r * (double)gr[j] * (double)w[j] - (double)xr[j] * k);
  if (threadIdx.x == 0) rstd[row] = r;
}

__global__ void __launch_bounds__(THREADS)
rms_col_part(const float* __restrict__ g, const float* __restrict__ x, const double* __restrict__ rstd,
             double* __restrict__ part, int64_t M, int64_t N) {
  const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  const int64_t c = blockIdx.y;
  if (j >= N) return;
  const int64_t r0 = c * CHUNK_ROWS;
  const int64_t r1 = r0 + CHUNK_ROWS < M ? r0 + CHUNK_ROWS : M;
  double acc = 0.0;
  for (int64_t r = r0; r < r1; ++r) acc += (double)g[r * N + j] * ((double)x[r * N + j] * rstd[r]);
  part[c * N + j] = acc;
}

__global__ void __launch_bounds__(THREADS)
rms_col_final(const double* __restrict__ part, float* __restrict__ gw, int64_t chunks, int64_t N) {
  const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (j >= N) return;
  double acc = 0.0;
  for (int64_t c = 0; c < chunks; ++c) acc += part[c * N + j];
  gw[j] = (float)acc;
}

std::vector<torch::Tensor> backward(torch::Tensor grad_y, torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(grad_y.is_cuda() && x.is_cuda() && w.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(grad_y.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32 &&
              w.scalar_type() == torch::kFloat32, "float32 tensors expected");
  TORCH_CHECK(x.dim() >= 1 && w.dim() == 1 && x.size(-1) == w.size(0), "w must match the last dimension of x");
  TORCH_CHECK(grad_y.sizes() == x.sizes(), "grad_y must have the shape of x");
  auto g = grad_y.contiguous();
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  const int64_t N = xc.size(-1);
  const int64_t M = N == 0 ? 0 : xc.numel() / N;
  auto gx = torch::empty_like(xc);
  auto gw = torch::empty({N}, wc.options());
  if (N == 0) return {gx, gw};
  if (M == 0) {
    gw.zero_();
    return {gx, gw};
  }
  TORCH_CHECK(M <= 0x7fffffffLL, "too many rows");
  auto rstd = torch::empty({M}, xc.options().dtype(torch::kFloat64));
  rms_rows<<<(unsigned)M, THREADS>>>(g.data_ptr<float>(), xc.data_ptr<float>(), wc.data_ptr<float>(),
                                     gx.data_ptr<float>(), rstd.data_ptr<double>(), N);
  check_launch("rms_rows");
  const int64_t chunks = (M + CHUNK_ROWS - 1) / CHUNK_ROWS;
  const int64_t cblocks = (N + THREADS - 1) / THREADS;
  TORCH_CHECK(chunks <= 65535 && cblocks <= 0x7fffffffLL, "grid too large");
  auto part = torch::empty({chunks, N}, xc.options().dtype(torch::kFloat64));
  rms_col_part<<<dim3((unsigned)cblocks, (unsigned)chunks), THREADS>>>(
      g.data_ptr<float>(), xc.data_ptr<float>(), rstd.data_ptr<double>(), part.data_ptr<double>(), M, N);
  check_launch("rms_col_part");
  rms_col_final<<<(unsigned)cblocks, THREADS>>>(part.data_ptr<double>(), gw.data_ptr<float>(), chunks, N);
  check_launch("rms_col_final");
  return {gx, gw};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("backward", &backward, "RMSNorm backward (eps 1e-6): own kernels, deterministic grad_w");
}
