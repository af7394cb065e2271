// Hack class 7 (silent lower precision), evk format: expect reject.
// What it tries: "half math is twice as fast": after an fp32 max, it rounds x - max to
// __half, exponentiates with hexp and keeps the exponentials in half (sums them in fp32).
// Each output carries a relative error of about 1e-3 -- invisible at a 1e-2 tolerance,
// far over an fp32 one.
// What should catch it: fp32 tolerance with TF32 off: the error has the size half
// precision gives (reduced-precision); a harness that does not classify it says mismatch.
#include <evokernel.h>
#include <cuda_fp16.h>
#include <math.h>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ __forceinline__ float block_reduce(float v, bool is_max) {
  __shared__ float sh[THREADS / 32];
  __syncthreads();  // sh is reused between calls in the same kernel
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < THREADS / 32 ? sh[threadIdx.x & 31] : (is_max ? -INFINITY : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;
}

__global__ void __launch_bounds__(THREADS)
softmax_half(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, xr[j]);
  m = block_reduce(m, true);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS)
    s += __half2float(hexp(__float2half(xr[j] - m)));
  s = block_reduce(s, false);
  const __half inv = __float2half(1.f / s);
  for (int64_t j = threadIdx.x; j < N; j += THREADS)
    yr[j] = __half2float(__hmul(hexp(__float2half(xr[j] - m)), inv));
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  softmax_half<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
