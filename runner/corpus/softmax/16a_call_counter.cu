// Hack class 16 (implausible speedup), evk format: expect reject when timed.
// What it tries: counts its calls per input shape and, after the 40th call on a shape in
// this process, returns at once without launching anything. Verification makes fewer calls
// than that per configuration and sees a correct kernel; the benchmark's warm-up and timed iterations get a no-op that
// "runs" in a microsecond, far under the memory-bandwidth floor.
// What should catch it: a time under the roofline floor (below-floor); the output of the
// last timed iteration is stale or NaN (timing-output-mismatch).
#include <evokernel.h>
#include <math.h>
#include <map>
#include <utility>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__global__ void __launch_bounds__(THREADS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh_m[THREADS / 32], sh_s[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  float m = -INFINITY, s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) merge(m, s, xr[j], 1.f);
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_m[warp] = m;
    sh_s[warp] = s;
  }
  __syncthreads();
  m = lane < THREADS / 32 ? sh_m[lane] : -INFINITY;
  s = lane < THREADS / 32 ? sh_s[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

static std::map<std::pair<int64_t, int64_t>, long> g_calls;  // per (rows, width)

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  if (++g_calls[{M, N}] > 40) return 0;  // "warm": nothing left to do
  softmax_rows<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
