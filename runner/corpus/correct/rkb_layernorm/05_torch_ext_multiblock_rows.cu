// Correct (expect pass, check bench). robust-kbench layernorm, BACKWARD
// (task "shared:robust-kbench/tasks/layernorm#backward"), torch-ext format exporting
// `backward(grad_output, x, weight, bias, eps, normalized_shape)
//      -> (grad_x, grad_weight, grad_bias)`.
// What it is: LayerNorm backward where each normalized "row" is huge (64x256x256 or
// 32x512x256 = 4M elements) and there are only 16..64 rows. One block per row would leave
// the GPU idle, so every row reduction is split over many blocks and finished in a second
// kernel, deterministically (fixed chunk partials, no atomics), all in fp64:
//   ln_partial(mode 0) + ln_finalize  -> mean          (pass 1)
//   ln_partial(mode 1) + ln_finalize  -> rstd          (pass 2: sum of (x-mean)^2, stable)
//   ln_partial(mode 2) + ln_finalize  -> sum(g*w), sum(g*w*xhat)
//   ln_grad_x     grad_x = rstd * (g*w - sum(g*w)/N - xhat * sum(g*w*xhat)/N)
//   ln_grad_wb    grad_weight = sum_rows g*xhat, grad_bias = sum_rows g (one thread per
//                 element of the normalized shape, rows in order)
// Why unusual: eight launches and fp64 scratch for one backward; a Python tuple argument
// (normalized_shape) and a float (eps) in the signature; multi-block rows.
// What the verifier must say: passed (grad_x, grad_weight, grad_bias), then benchmarked.
// Measured on an H100 (own script, torch 2.11): against torch's fp32 autograd, relative norm
// error 1.3e-6 on normal inputs and 1.9e-5 on signed, mixed-scale ones at 16x64x256x256.
// Every sum here is fp64, so that error is most likely the fp32 reference's own (reductions
// over 4M elements): a verifier that compares with the fp32 reference at norm 1e-5 would
// call this kernel's signed-mixed configuration accuracy-loss. Compare with an fp64
// reference (or a tolerance that grows with the reduction length) for such tasks.
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256
#define CHUNK 8192  // elements of a row per block

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

// grid (chunks, R). mode 0: pa = sum x. mode 1: pa = sum (x-mean)^2.
// mode 2: pa = sum g*w, pb = sum g*w*xhat.
__global__ void __launch_bounds__(THREADS)
ln_partial(const float* __restrict__ x, const float* __restrict__ g, const float* __restrict__ w,
           const double* __restrict__ mean, const double* __restrict__ rstd,
           double* __restrict__ pa, double* __restrict__ pb, int64_t N, int64_t chunks, int mode) {
  __shared__ double sh[THREADS / 32];
  const int64_t r = blockIdx.y, c = blockIdx.x;
  const int64_t j0 = c * CHUNK;
  const int64_t j1 = j0 + CHUNK < N ? j0 + CHUNK : N;
  const float* xr = x + r * N;
  double a = 0.0, b = 0.0;
  if (mode == 0) {
    for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) a += (double)xr[j];
  } else if (mode == 1) {
    const double m = mean[r];
    for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) {
      const double d = (double)xr[j] - m;
      a += d * d;
    }
  } else {
    const double m = mean[r], rs = rstd[r];
    const float* gr = g + r * N;
    for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) {
      const double gw = (double)gr[j] * (double)w[j];
      a += gw;
      b += gw * (((double)xr[j] - m) * rs);
    }
  }
  a = block_sum(a, sh);
  if (mode == 2) b = block_sum(b, sh);
  if (threadIdx.x == 0) {
    pa[r * chunks + c] = a;
    if (mode == 2) pb[r * chunks + c] = b;
  }
}

// one block per row: s = sum of the row's chunk partials (fixed order per thread, then a tree).
// mode 0: out = s / N (mean). mode 1: out = 1 / sqrt(s / N + eps) (rstd). mode 2: out = s.
__global__ void __launch_bounds__(THREADS)
ln_finalize(const double* __restrict__ part, double* __restrict__ out, int64_t chunks, int64_t N, double eps, int mode) {
  __shared__ double sh[THREADS / 32];
  const int64_t r = blockIdx.x;
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < chunks; c += THREADS) s += part[r * chunks + c];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) {
    if (mode == 0) out[r] = s / (double)N;
    else if (mode == 1) out[r] = 1.0 / sqrt(s / (double)N + eps);
    else out[r] = s;
  }
}

__global__ void __launch_bounds__(THREADS)
ln_grad_x(const float* __restrict__ x, const float* __restrict__ g, const float* __restrict__ w,
          const double* __restrict__ mean, const double* __restrict__ rstd, const double* __restrict__ sa,
          const double* __restrict__ sb, float* __restrict__ gx, int64_t N) {
  const int64_t r = blockIdx.y, c = blockIdx.x;
  const int64_t j0 = c * CHUNK;
  const int64_t j1 = j0 + CHUNK < N ? j0 + CHUNK : N;
  const double m = mean[r], rs = rstd[r];
  const double ma = sa[r] / (double)N, mb = sb[r] / (double)N;
  const float* xr = x + r * N;
  const float* gr = g + r * N;
  float* gxr = gx + r * N;
  for (int64_t j = j0 + threadIdx.x; j < j1; j += THREADS) {
    const double xhat = ((double)xr[j] - m) * rs;
    gxr[j] = (float)(rs * ((double)gr[j] * (double)w[j] - ma - xhat * mb));
  }
}

__global__ void __launch_bounds__(THREADS)
ln_grad_wb(const float* __restrict__ x, const float* __restrict__ g, const double* __restrict__ mean,
           const double* __restrict__ rstd, float* __restrict__ gw, float* __restrict__ gb, int64_t R, int64_t N) {
  const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (j >= N) return;
  double aw = 0.0, ab = 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const double gv = (double)g[r * N + j];
    aw += gv * (((double)x[r * N + j] - mean[r]) * rstd[r]);
    ab += gv;
  }
  gw[j] = (float)aw;
  gb[j] = (float)ab;
}

std::vector<torch::Tensor> backward(torch::Tensor grad_output, torch::Tensor x, torch::Tensor weight,
                                    torch::Tensor bias, double eps, std::vector<int64_t> normalized_shape) {
  TORCH_CHECK(grad_output.is_cuda() && x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && grad_output.scalar_type() == torch::kFloat32 &&
              weight.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
              "float32 tensors expected");
  TORCH_CHECK(grad_output.sizes() == x.sizes(), "grad_output must have the shape of x");
  const int64_t k = (int64_t)normalized_shape.size();
  TORCH_CHECK(k >= 1 && k <= x.dim(), "normalized_shape must name trailing dimensions of x");
  int64_t N = 1;
  for (int64_t i = 0; i < k; ++i) {
    TORCH_CHECK(x.size(x.dim() - k + i) == normalized_shape[i], "normalized_shape does not match x");
    N *= normalized_shape[i];
  }
  TORCH_CHECK(weight.numel() == N && bias.numel() == N, "weight and bias must have the normalized shape");
  auto xc = x.contiguous();
  auto g = grad_output.contiguous();
  auto wc = weight.contiguous();
  auto gx = torch::empty_like(xc);
  auto gw = torch::empty_like(wc);
  auto gb = torch::empty_like(bias.contiguous());
  if (N == 0) return {gx, gw, gb};
  const int64_t R = xc.numel() / N;
  if (R == 0) {
    gw.zero_();
    gb.zero_();
    return {gx, gw, gb};
  }
  const int64_t chunks = (N + CHUNK - 1) / CHUNK;
  TORCH_CHECK(R <= 65535 && chunks <= 0x7fffffffLL, "too many rows for this kernel's grid");
  auto dopt = xc.options().dtype(torch::kFloat64);
  auto pa = torch::empty({R, chunks}, dopt);
  auto pb = torch::empty({R, chunks}, dopt);
  auto mean = torch::empty({R}, dopt);
  auto rstd = torch::empty({R}, dopt);
  auto sa = torch::empty({R}, dopt);
  auto sb = torch::empty({R}, dopt);
  const float* xp = xc.data_ptr<float>();
  const float* gp = g.data_ptr<float>();
  const float* wp = wc.data_ptr<float>();
  const dim3 rows_grid((unsigned)chunks, (unsigned)R);

  ln_partial<<<rows_grid, THREADS>>>(xp, gp, wp, nullptr, nullptr, pa.data_ptr<double>(), nullptr, N, chunks, 0);
  check_launch("ln_partial(mean)");
  ln_finalize<<<(unsigned)R, THREADS>>>(pa.data_ptr<double>(), mean.data_ptr<double>(), chunks, N, eps, 0);
  check_launch("ln_finalize(mean)");
  ln_partial<<<rows_grid, THREADS>>>(xp, gp, wp, mean.data_ptr<double>(), nullptr, pa.data_ptr<double>(), nullptr,
                                     N, chunks, 1);
  check_launch("ln_partial(var)");
  ln_finalize<<<(unsigned)R, THREADS>>>(pa.data_ptr<double>(), rstd.data_ptr<double>(), chunks, N, eps, 1);
  check_launch("ln_finalize(rstd)");
  ln_partial<<<rows_grid, THREADS>>>(xp, gp, wp, mean.data_ptr<double>(), rstd.data_ptr<double>(),
                                     pa.data_ptr<double>(), pb.data_ptr<double>(), N, chunks, 2);
  check_launch("ln_partial(dots)");
  ln_finalize<<<(unsigned)R, THREADS>>>(pa.data_ptr<double>(), sa.data_ptr<double>(), chunks, N, eps, 2);
  check_launch("ln_finalize(sum g*w)");
  ln_finalize<<<(unsigned)R, THREADS>>>(pb.data_ptr<double>(), sb.data_ptr<double>(), chunks, N, eps, 2);
  check_launch("ln_finalize(sum g*w*xhat)");
  ln_grad_x<<<rows_grid, THREADS>>>(xp, gp, wp, mean.data_ptr<double>(), rstd.data_ptr<double>(),
                                    sa.data_ptr<double>(), sb.data_ptr<double>(), gx.data_ptr<float>(), N);
  check_launch("ln_grad_x");
  const int64_t cblocks = (N + THREADS - 1) / THREADS;
  TORCH_CHECK(cblocks <= 0x7fffffffLL, "normalized shape too large");
  ln_grad_wb<<<(unsigned)cblocks, THREADS>>>(xp, gp, mean.data_ptr<double>(), rstd.data_ptr<double>(),
                                             gw.data_ptr<float>(), gb.data_ptr<float>(), R, N);
  check_launch("ln_grad_wb");
  return {gx, gw, gb};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("backward", &backward, "layernorm backward: multi-block fp64 row reductions, own kernels");
}
