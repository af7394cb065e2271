// Baseline: F.layer_norm over the last dimension with affine weight and bias, eps 1e-5, fp32.
// One block per row. Each thread runs Welford's update over its strided elements; the
// (count, mean, M2) triples are merged (Chan et al.) with warp shuffles and then across
// warps through shared memory. A second pass over the row (mostly L2 hits) normalises
// with the biased variance and applies weight and bias.
#include <evokernel.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");

static const int kBadArgs = 1000;
#define LN_EPS 1e-5f

// Merge (nb, mb, qb) into (n, m, q): counts, means and sums of squared deviations.
__device__ __forceinline__ void merge(float& n, float& m, float& q, float nb, float mb, float qb) {
  const float nn = n + nb;
  if (nn == 0.f) return;
  const float d = mb - m;
  const float fb = nb / nn;
  m += d * fb;
  q += qb + d * d * n * fb;
  n = nn;
}

__device__ __forceinline__ void warp_merge(float& n, float& m, float& q) {
  for (int o = 16; o > 0; o >>= 1) {
    const float nb = __shfl_xor_sync(0xffffffffu, n, o);
    const float mb = __shfl_xor_sync(0xffffffffu, m, o);
    const float qb = __shfl_xor_sync(0xffffffffu, q, o);
    merge(n, m, q, nb, mb, qb);
  }
}

__global__ void __launch_bounds__(BLOCK_SIZE)
layernorm_rows(const float* __restrict__ x, const float* __restrict__ w,
               const float* __restrict__ b, float* __restrict__ y, int64_t N) {
  __shared__ float sh_n[32], sh_m[32], sh_q[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * N;
  float* yr = y + row * N;

  float n = 0.f, m = 0.f, q = 0.f;
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) {
    const float v = xr[j];
    n += 1.f;
    const float d = v - m;
    m += d / n;
    q += d * (v - m);
  }
  // merge() is not symmetric in its arguments, so lanes may end with results that differ
  // in the last bit; only lane 0's is used, and the final statistics go through shared
  // memory so that every thread of the block normalises with the same values.
  warp_merge(n, m, q);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_n[warp] = n;
    sh_m[warp] = m;
    sh_q[warp] = q;
  }
  __syncthreads();
  constexpr int kWarps = BLOCK_SIZE / 32;
  if (warp == 0) {
    n = lane < kWarps ? sh_n[lane] : 0.f;
    m = lane < kWarps ? sh_m[lane] : 0.f;
    q = lane < kWarps ? sh_q[lane] : 0.f;
    warp_merge(n, m, q);
    if (lane == 0) {
      sh_m[0] = m;
      sh_q[0] = rsqrtf(q / (float)N + LN_EPS);
    }
  }
  __syncthreads();
  const float mean = sh_m[0], rstd = sh_q[0];
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
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
  if (call->n_inputs != 3 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* w = &call->inputs[1];
  const EvkTensor* b = &call->inputs[2];
  const EvkTensor* y = &call->outputs[0];
  if (x->ndim < 1 || x->dtype != EVK_FLOAT32 || w->dtype != EVK_FLOAT32 ||
      b->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32)
    return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  if (w->ndim != 1 || w->shape[0] != N || b->ndim != 1 || b->shape[0] != N) return kBadArgs;
  if (y->ndim != x->ndim) return kBadArgs;
  for (int i = 0; i < x->ndim; ++i)
    if (x->shape[i] != y->shape[i]) return kBadArgs;
  if (!contiguous(x) || !contiguous(w) || !contiguous(b) || !contiguous(y)) return kBadArgs;

  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0 || N == 0) return 0;
  if (M > 0x7fffffff) return kBadArgs;

  layernorm_rows<<<(unsigned)M, BLOCK_SIZE, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<const float*>(w->data),
      static_cast<const float*>(b->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
