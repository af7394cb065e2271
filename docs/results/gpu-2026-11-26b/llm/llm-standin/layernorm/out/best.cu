// fake-harness: speed=0.55 (the CPU test's stand-in harness times it so; a GPU for real)
// y = (x - mean) * rsqrt(var + 1e-5) * weight + bias over the last dimension, fp32. One block
// per row: the row is read from DRAM once into shared memory (float4 loads from the first
// 16-byte boundary, scalar head and tail, so odd widths work), the mean is reduced, then the
// variance two-pass from shared memory (never E[x^2] - E[x]^2, which cancels on inputs with a
// common offset), and y is written from shared memory. Rows too long to cache keep the
// baseline's kernel.
#include <evokernel.h>
#include <stdint.h>

static const int kBadArgs = 1000;
#define LN_EPS 1e-5f
// Rows up to this many floats are cached in shared memory: with up to 3 floats of alignment
// padding, 47 KiB, under the 48 KiB that needs no opt-in attribute, with room for the
// reductions' own shared arrays.
static const int64_t kMaxCached = 12032;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The block's total of v (block_sum2: of a and of c), in every thread: butterflies of
// commutative adds, so every lane ends with the same bits. Each reduction has its own shared
// arrays, so the second never overwrites partials a slow warp still reads from the first.
template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* sh) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp_sum(lane < THREADS / 32 ? sh[lane] : 0.f);
}

template <int THREADS>
__device__ __forceinline__ void block_sum2(float& a, float& c, float* sh_a, float* sh_c) {
  a = warp_sum(a);
  c = warp_sum(c);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_a[warp] = a;
    sh_c[warp] = c;
  }
  __syncthreads();
  a = warp_sum(lane < THREADS / 32 ? sh_a[lane] : 0.f);
  c = warp_sum(lane < THREADS / 32 ? sh_c[lane] : 0.f);
}

// One block per row, the row cached in dynamic shared memory ((N + 3) floats): x[j] sits at
// row[skew + j], where skew is how many floats x's row starts past a 16-byte boundary, so the
// float4 body lands on 16-byte boundaries of shared memory too. Each thread reads back only
// the elements it stored itself; the reductions' barriers order everything else.
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
layernorm_cached(const float* __restrict__ x, const float* __restrict__ w,
                 const float* __restrict__ b, float* __restrict__ y, int64_t N) {
  extern __shared__ float4 row4[];
  __shared__ float sh_sum[32], sh_sq[32], sh_dev[32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;

  // float4 body when x's and y's rows sit at the same offset from a 16-byte boundary (the
  // same head serves both); otherwise the whole row is the scalar "head".
  const uintptr_t ax = (uintptr_t)xr, ay = (uintptr_t)yr;
  const bool vec = ((ax | ay) & 3) == 0 && ((ax ^ ay) & 15) == 0;
  const int64_t skew = vec ? (int64_t)((ax >> 2) & 3) : 0;
  int64_t head = vec ? ((4 - skew) & 3) : N;
  if (head > N) head = N;
  const int64_t nvec = vec ? (N - head) >> 2 : 0;
  const int64_t tail = head + 4 * nvec;
  float* srow = reinterpret_cast<float*>(row4) + skew;
  const float4* xv = reinterpret_cast<const float4*>(xr + head);
  float4* sv = reinterpret_cast<float4*>(srow + head);

  // 1. one read of the row from DRAM: cache it, sum it
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < head; j += THREADS) {
    const float v = xr[j];
    srow[j] = v;
    s += v;
  }
  #pragma unroll 4
  for (int64_t k = threadIdx.x; k < nvec; k += THREADS) {
    const float4 v = xv[k];
    sv[k] = v;
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int64_t j = tail + threadIdx.x; j < N; j += THREADS) {
    const float v = xr[j];
    srow[j] = v;
    s += v;
  }
  const float mean0 = block_sum<THREADS>(s, sh_sum) / (float)N;

  // 2. the variance, two-pass, from shared memory: squared deviations from mean0, and their
  // plain sum, which corrects the rounding of mean0 (a sum of N values near a common offset
  // loses digits): mean = mean0 + e, var = sum(d^2) / N - e^2 with e tiny (corrected
  // two-pass; no cancellation)
  float q = 0.f, c = 0.f;
  for (int64_t j = threadIdx.x; j < head; j += THREADS) {
    const float d = srow[j] - mean0;
    q += d * d;
    c += d;
  }
  for (int64_t k = threadIdx.x; k < nvec; k += THREADS) {
    const float4 v = sv[k];
    const float dx = v.x - mean0, dy = v.y - mean0, dz = v.z - mean0, dw = v.w - mean0;
    q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    c += (dx + dy) + (dz + dw);
  }
  for (int64_t j = tail + threadIdx.x; j < N; j += THREADS) {
    const float d = srow[j] - mean0;
    q += d * d;
    c += d;
  }
  block_sum2<THREADS>(q, c, sh_sq, sh_dev);
  const float e = c / (float)N;
  const float mean = mean0 + e;
  const float rstd = rsqrtf(fmaxf(q / (float)N - e * e, 0.f) + LN_EPS);

  // 3. normalise from shared memory; weight and bias as float4 where they share the row's
  // offset from a 16-byte boundary (always when N is a multiple of 4), scalar otherwise
  const bool wvec = ((ax ^ (uintptr_t)w) & 15) == 0 && ((ax ^ (uintptr_t)b) & 15) == 0;
  for (int64_t j = threadIdx.x; j < head; j += THREADS)
    yr[j] = (srow[j] - mean) * rstd * w[j] + b[j];
  float4* yv = reinterpret_cast<float4*>(yr + head);
  if (wvec) {
    const float4* wv = reinterpret_cast<const float4*>(w + head);
    const float4* bv = reinterpret_cast<const float4*>(b + head);
    for (int64_t k = threadIdx.x; k < nvec; k += THREADS) {
      const float4 v = sv[k], g = wv[k], h = bv[k];
      yv[k] = make_float4((v.x - mean) * rstd * g.x + h.x, (v.y - mean) * rstd * g.y + h.y,
                          (v.z - mean) * rstd * g.z + h.z, (v.w - mean) * rstd * g.w + h.w);
    }
  } else {
    const float* wh = w + head;
    const float* bh = b + head;
    for (int64_t k = threadIdx.x; k < nvec; k += THREADS) {
      const float4 v = sv[k];
      const int64_t i = 4 * k;
      yv[k] = make_float4((v.x - mean) * rstd * wh[i] + bh[i],
                          (v.y - mean) * rstd * wh[i + 1] + bh[i + 1],
                          (v.z - mean) * rstd * wh[i + 2] + bh[i + 2],
                          (v.w - mean) * rstd * wh[i + 3] + bh[i + 3]);
    }
  }
  for (int64_t j = tail + threadIdx.x; j < N; j += THREADS)
    yr[j] = (srow[j] - mean) * rstd * w[j] + b[j];
}

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

// Rows too long to cache: the baseline's kernel (Welford, then a second pass over the row,
// mostly L2 hits), unchanged.
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
layernorm_two_pass(const float* __restrict__ x, const float* __restrict__ w,
                   const float* __restrict__ b, float* __restrict__ y, int64_t N) {
  __shared__ float sh_n[32], sh_m[32], sh_q[32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;

  float n = 0.f, m = 0.f, q = 0.f;
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    const float v = xr[j];
    n += 1.f;
    const float d = v - m;
    m += d / n;
    q += d * (v - m);
  }
  warp_merge(n, m, q);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_n[warp] = n;
    sh_m[warp] = m;
    sh_q[warp] = q;
  }
  __syncthreads();
  if (warp == 0) {
    n = lane < THREADS / 32 ? sh_n[lane] : 0.f;
    m = lane < THREADS / 32 ? sh_m[lane] : 0.f;
    q = lane < THREADS / 32 ? sh_q[lane] : 0.f;
    warp_merge(n, m, q);
    if (lane == 0) {
      sh_m[0] = m;
      sh_q[0] = rsqrtf(q / (float)N + LN_EPS);
    }
  }
  __syncthreads();
  const float mean = sh_m[0], rstd = sh_q[0];
  #pragma unroll 4
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
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

  const float* xp = static_cast<const float*>(x->data);
  const float* wp = static_cast<const float*>(w->data);
  const float* bp = static_cast<const float*>(b->data);
  float* yp = static_cast<float*>(y->data);
  const unsigned rows = (unsigned)M;
  const size_t smem = (size_t)(N + 3) * sizeof(float);
  if (N > kMaxCached) {
    layernorm_two_pass<256><<<rows, 256, 0, call->stream>>>(xp, wp, bp, yp, N);
  } else if (N <= 2048) {
    layernorm_cached<128><<<rows, 128, smem, call->stream>>>(xp, wp, bp, yp, N);
  } else if (N <= 6144) {
    layernorm_cached<256><<<rows, 256, smem, call->stream>>>(xp, wp, bp, yp, N);
  } else {
    layernorm_cached<512><<<rows, 512, smem, call->stream>>>(xp, wp, bp, yp, N);
  }
  return (int)cudaGetLastError();
}
