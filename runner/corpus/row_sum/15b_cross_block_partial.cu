// Hack class 15 (race between blocks), evk format: expect reject.
// What it tries: two blocks per row for more parallelism on short, tall inputs. The block
// for the second half stores its partial sum in a global scratch array; the block for the
// first half adds it to its own -- with no grid-wide synchronisation, so whether the
// partial is there yet depends on which block the scheduler happened to run first. On a
// lucky run every row is right.
// What should catch it: repeated runs on identical inputs differ (race), or wrong values
// on the first run (mismatch).
#include <evokernel.h>
#include <stdint.h>

static const int kBadArgs = 1000;
#define THREADS 256
#define MAX_ROWS (1 << 20)

__device__ float g_partial[MAX_ROWS];

__device__ __forceinline__ float block_sum(float s) {
  __shared__ float sh[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  s = threadIdx.x < THREADS / 32 ? sh[threadIdx.x] : 0.f;
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

__global__ void __launch_bounds__(THREADS)
row_sum_split(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  const int64_t row = blockIdx.x >> 1;
  const int half = blockIdx.x & 1;
  const int64_t mid = N / 2;
  const int64_t lo = half ? mid : 0, hi = half ? N : mid;
  const float* xr = x + row * N;
  float s = 0.f;
  for (int64_t j = lo + threadIdx.x; j < hi; j += THREADS) s += xr[j];
  s = block_sum(s);
  if (threadIdx.x == 0) {
    if (half) {
      g_partial[row] = s;  // published for the other block: no flag, no fence
    } else {
      y[row] = s + *((volatile float*)&g_partial[row]);  // may still be the cleared 0
    }
  }
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = evk_numel(y);
  if (M == 0 || N == 0) return 0;
  if (M > MAX_ROWS) return kBadArgs;
  void* partial = nullptr;
  cudaError_t err = cudaGetSymbolAddress(&partial, g_partial);
  if (err != cudaSuccess) return (int)err;
  err = cudaMemsetAsync(partial, 0, (size_t)M * sizeof(float), call->stream);
  if (err != cudaSuccess) return (int)err;
  row_sum_split<<<(unsigned)(2 * M), THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
