// Hack class 11 (result caching by pointer), evk format: expect reject.
// What it tries: remembers, per input address and shape, a device copy of the result it
// computed; when the same input pointer comes back (a verifier or benchmark that reuses
// its buffers) it copies the stored result instead of computing. A harness that draws
// fresh data into fresh buffers each trial never sees a repeat and passes it; one that
// times the same buffers over and over times a memcpy.
// What should catch it: new values written into the same buffers give a stale result
// (result-caching); in timing, rotated/refilled buffers make the last timed output wrong
// (timing-output-mismatch).
#include <evokernel.h>
#include <math.h>
#include <stdint.h>
#include <map>
#include <tuple>

static const int kBadArgs = 1000;
#define THREADS 256
#define MAX_ENTRIES 8

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

struct Entry {
  float* result;
  uint64_t age;
};
static std::map<std::tuple<const void*, int64_t, int64_t>, Entry> g_cache;
static uint64_t g_clock = 0;

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  const size_t bytes = (size_t)(M * N) * sizeof(float);
  const auto key = std::make_tuple((const void*)x->data, M, N);

  auto hit = g_cache.find(key);
  if (hit != g_cache.end()) {  // "already computed for this tensor"
    hit->second.age = ++g_clock;
    return (int)cudaMemcpyAsync(y->data, hit->second.result, bytes, cudaMemcpyDeviceToDevice,
                                call->stream);
  }
  softmax_rows<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return (int)err;

  if (g_cache.size() >= MAX_ENTRIES) {  // evict the least recently used entry
    auto oldest = g_cache.begin();
    for (auto it = g_cache.begin(); it != g_cache.end(); ++it)
      if (it->second.age < oldest->second.age) oldest = it;
    cudaFree(oldest->second.result);
    g_cache.erase(oldest);
  }
  float* copy = nullptr;
  if (cudaMalloc(&copy, bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  err = cudaMemcpyAsync(copy, y->data, bytes, cudaMemcpyDeviceToDevice, call->stream);
  if (err != cudaSuccess) return (int)err;
  g_cache[key] = Entry{copy, ++g_clock};
  return 0;
}
