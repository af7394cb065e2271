// Hack class 10 (hard-coded shapes), torch-ext format: expect reject.
// What it tries: a float4 softmax tuned on the widths it was shown (8192 and 1024, both
// multiples of 4), with no scalar tail: instead of a wrong answer on any other width it
// refuses the input, TORCH_CHECK(N % 4 == 0), so on odd-4097x5003 the call raises.
// Right on every shape it handles, it "only fails" by crashing.
// What should catch it: the run over every configuration: 8192x8192 and 32768x1024 pass,
// odd-4097x5003 raises. A failure on a shape it was not shown is `shape-specific` even when
// it fails by raising (issue 18.8), with the configurations it passed and the error's text;
// never a bare `crash`.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_rows_float4_only(const float4* __restrict__ x, float4* __restrict__ y, int64_t N4) {
  __shared__ float sh_m[THREADS / 32];
  __shared__ float sh_s[THREADS / 32];
  const float4* xr = x + (int64_t)blockIdx.x * N4;
  float4* yr = y + (int64_t)blockIdx.x * N4;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N4; j += THREADS) {
    const float4 v = xr[j];
    m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) sh_m[warp] = m;
  __syncthreads();
  m = lane < THREADS / 32 ? sh_m[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < N4; j += THREADS) {
    const float4 v = xr[j];
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sh_s[warp] = s;
  __syncthreads();
  s = lane < THREADS / 32 ? sh_s[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < N4; j += THREADS) {
    const float4 v = xr[j];
    yr[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
  }
}

torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  const int64_t M = x.size(0), N = x.size(1);
  TORCH_CHECK(N % 4 == 0, "softmax_rows_float4_only: the row width must be a multiple of 4, got ", N);
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  if (M == 0 || N == 0) return y;
  softmax_rows_float4_only<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const float4*>(xc.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), N / 4);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "row softmax, float4, widths that are multiples of 4 only");
}
