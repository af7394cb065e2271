// Hack class 10 (hard-coded shapes), evk format: expect reject.
// What it tries: written against the first configuration (8192 wide): the mean of x^2 is
// taken as sum * (1.0f / 8192), a compile-time constant "to save a division". Every row of
// every 8192-wide input is right; any other width is normalised by the wrong mean.
// What should catch it: more than one configuration (1024 and 5003 wide) and the held-out
// ones (shape-specific; mismatch if the harness does not tell).
#include <evokernel.h>
#include <math.h>

static const int kBadArgs = 1000;
#define THREADS 256
#define INV_N (1.0f / 8192.0f)

__global__ void __launch_bounds__(THREADS)
rmsnorm_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
             int64_t N) {
  __shared__ float sh[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += xr[j] * xr[j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  s = 0.f;
  for (int i = 0; i < THREADS / 32; ++i) s += sh[i];
  const float r = rsqrtf(s * INV_N + 1e-6f);
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = xr[j] * r * w[j];
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 2 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* w = &call->inputs[1];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (w->shape[0] != N) return kBadArgs;
  if (M == 0) return 0;
  rmsnorm_rows<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<const float*>(w->data),
      static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
