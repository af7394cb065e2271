// Correct (expect pass). Row softmax over the last dimension, fp32, evk format.
// One warp per row, eight rows per block. Each lane keeps an online (max, sum of exp)
// pair; the row is read with float4 loads once the pointer is 16-byte aligned (scalar
// head and tail otherwise), so odd widths (3001, 257, ...) work. The max starts at
// -INFINITY, and merging two empty pairs never computes exp(-inf - -inf).
// What should happen: verification passes on every configuration, held-out ones too.
#include <evokernel.h>
#include <math.h>
#include <stdint.h>

static const int kBadArgs = 1000;
static const int kRowsPerBlock = 8;

// Merge (m2, s2) into (m, s), where s is a sum of exp(v - m). Empty pairs are (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
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

__global__ void __launch_bounds__(32 * kRowsPerBlock)
softmax_warp_rows(const float* __restrict__ x, float* __restrict__ y, int64_t M, int64_t N) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= M) return;  // whole warps leave together: shuffles below stay full-warp
  const float* xr = x + row * N;
  float* yr = y + row * N;

  // Same misalignment on input and output rows: one head length serves both.
  const bool vec = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
  int64_t head = vec ? (int64_t)(((16 - ((uintptr_t)xr & 15)) & 15) >> 2) : N;
  if (head > N) head = N;
  const int64_t nvec = vec ? (N - head) >> 2 : 0;
  const int64_t tail = head + nvec * 4;
  const float4* xv = reinterpret_cast<const float4*>(xr + head);

  float m = -INFINITY, s = 0.f;
  for (int64_t j = lane; j < head; j += 32) push(m, s, xr[j]);
  for (int64_t j = lane; j < nvec; j += 32) {
    const float4 v = xv[j];
    push(m, s, v.x);
    push(m, s, v.y);
    push(m, s, v.z);
    push(m, s, v.w);
  }
  for (int64_t j = tail + lane; j < N; j += 32) push(m, s, xr[j]);

  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, m2, s2);
  }
  const float inv = 1.f / s;

  float4* yv = reinterpret_cast<float4*>(yr + head);
  for (int64_t j = lane; j < head; j += 32) yr[j] = expf(xr[j] - m) * inv;
  for (int64_t j = lane; j < nvec; j += 32) {
    const float4 v = xv[j];
    yv[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                        expf(v.w - m) * inv);
  }
  for (int64_t j = tail + lane; j < N; j += 32) yr[j] = expf(xr[j] - m) * inv;
}

static bool contiguous(const EvkTensor* t) {
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
  if (evk_numel(x) != evk_numel(y) || !contiguous(x) || !contiguous(y)) return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  const int64_t blocks = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > 0x7fffffff) return kBadArgs;
  softmax_warp_rows<<<(unsigned)blocks, 32 * kRowsPerBlock, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), M, N);
  return (int)cudaGetLastError();
}
