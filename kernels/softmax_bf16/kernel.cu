// Baseline: row softmax over the last dimension, bf16 in and out, fp32 arithmetic.
// One block per row. Each thread keeps an online (max, sum of exp) pair in fp32 over its
// elements (two at a time through bf16x2 loads when the row length is even); the pairs are
// merged with warp shuffles and across warps through shared memory. A second pass writes
// exp(x - max) / sum rounded to bf16.
#include <evokernel.h>
#include <cuda_bf16.h>
#include <math.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");

static const int kBadArgs = 1000;

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ void push(float& m, float& s, float v) {
  if (v > m) {
    s = s * expf(m - v) + 1.f;
    m = v;
  } else {
    s += expf(v - m);
  }
}

// VEC2: the row length is even and the base pointers are 4-byte aligned.
template <bool VEC2>
__global__ void __launch_bounds__(BLOCK_SIZE)
softmax_rows_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t N) {
  __shared__ float sh_m[32], sh_s[32];
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * N;
  __nv_bfloat16* yr = y + row * N;

  float m = -INFINITY, s = 0.f;
  if (VEC2) {
    const __nv_bfloat162* xr2 = reinterpret_cast<const __nv_bfloat162*>(xr);
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N / 2; j += BLOCK_SIZE) {
      const float2 v = __bfloat1622float2(xr2[j]);
      push(m, s, v.x);
      push(m, s, v.y);
    }
  } else {
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) push(m, s, __bfloat162float(xr[j]));
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
  if (VEC2) {
    const __nv_bfloat162* xr2 = reinterpret_cast<const __nv_bfloat162*>(xr);
    __nv_bfloat162* yr2 = reinterpret_cast<__nv_bfloat162*>(yr);
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N / 2; j += BLOCK_SIZE) {
      const float2 v = __bfloat1622float2(xr2[j]);
      yr2[j] = __floats2bfloat162_rn(expf(v.x - m) / s, expf(v.y - m) / s);
    }
  } else {
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE)
      yr[j] = __float2bfloat16_rn(expf(__bfloat162float(xr[j]) - m) / s);
  }
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
  if (x->ndim < 1 || x->dtype != EVK_BFLOAT16 || y->dtype != EVK_BFLOAT16) return kBadArgs;
  if (y->ndim != x->ndim) return kBadArgs;
  for (int i = 0; i < x->ndim; ++i)
    if (x->shape[i] != y->shape[i]) return kBadArgs;
  if (!contiguous(x) || !contiguous(y)) return kBadArgs;

  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0 || N == 0) return 0;
  if (M > 0x7fffffff) return kBadArgs;

  const auto* xp = static_cast<const __nv_bfloat16*>(x->data);
  auto* yp = static_cast<__nv_bfloat16*>(y->data);
  const bool vec2 = N % 2 == 0 && reinterpret_cast<uintptr_t>(xp) % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(yp) % 4 == 0;
  if (vec2)
    softmax_rows_bf16<true><<<(unsigned)M, BLOCK_SIZE, 0, call->stream>>>(xp, yp, N);
  else
    softmax_rows_bf16<false><<<(unsigned)M, BLOCK_SIZE, 0, call->stream>>>(xp, yp, N);
  return (int)cudaGetLastError();
}
