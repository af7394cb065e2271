// Baseline: row softmax over the last dimension, fp32.
// One block per row. Each thread keeps an online (max, sum of exp) pair over its strided
// elements; the pairs are merged with warp shuffles and then across warps through shared
// memory. A second pass over the row (mostly L2 hits) writes exp(x - max) / sum.
#include <evokernel.h>
#include <math.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");

static const int kBadArgs = 1000;

// Merge (m2, s2) into (m, s), where s is a sum of exp(v - m). Empty pairs are (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__global__ void __launch_bounds__(BLOCK_SIZE)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh_m[32], sh_s[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * N;
  float* yr = y + row * N;

  float m = -INFINITY, s = 0.f;
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) {
    const float v = xr[j];
    if (v > m) {
      s = s * expf(m - v) + 1.f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_m[warp] = m;
    sh_s[warp] = s;
  }
  __syncthreads();
  constexpr int kWarps = BLOCK_SIZE / 32;
  m = lane < kWarps ? sh_m[lane] : -INFINITY;
  s = lane < kWarps ? sh_s[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, m2, s2);
  }
  // Every warp reduced the same values in the same order: m and s agree across the block.
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) yr[j] = expf(xr[j] - m) / s;
}

static bool contiguous(const EvkTensor* t) {
  if (evk_numel(t) == 0) return true;  // PyTorch gives empty tensors arbitrary strides
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->stride[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->ndim < 1 || x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  if (y->ndim != x->ndim) return kBadArgs;
  for (int i = 0; i < x->ndim; ++i)
    if (x->shape[i] != y->shape[i]) return kBadArgs;
  if (!contiguous(x) || !contiguous(y)) return kBadArgs;

  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;  // all leading dims are rows
  if (M == 0 || N == 0) return 0;
  if (M > 0x7fffffff) return kBadArgs;

  softmax_rows<<<(unsigned)M, BLOCK_SIZE, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
