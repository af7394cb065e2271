// Baseline: backward of y = x * rsqrt(mean(x^2, -1) + 1e-6) * w, fp32.
// Inputs (grad_y, x, w); outputs (grad_x, grad_w). With r = rsqrt(mean(x^2) + eps) per row:
//   grad_x[i, j] = r * g[i, j] * w[j] - r^3 / N * x[i, j] * sum_k g[i, k] * w[k] * x[i, k]
//   grad_w[j]    = sum_i g[i, j] * x[i, j] * r_i
// Pass 1: a grid of G blocks (BLOCKS_PER_SM a multiprocessor, or as many as fit); block b owns
// a contiguous chunk of rows. Per row it reduces sum(x^2) and sum(g*w*x) over the block (warp
// shuffles, then shared memory), writes the grad_x row, and adds g*x*r into its own partial
// grad_w row. That partial row is kept in shared memory when it fits (48 KB, or with SMEM_OPTIN
// the device's opt-in limit: 227 KB a block on Hopper), else in the workspace itself; each column
// belongs to one thread, so no atomics are needed. At the end the block writes its partial row
// to workspace row b.
// Pass 2: grad_w[j] = sum over b of workspace[b, j] in a fixed order (deterministic).
// The workspace is a static device array (G is capped so that G * N fits). Rows longer than
// the whole array get G = 1, and that one block accumulates straight into grad_w.
// Tunables (task.json): BLOCK_SIZE threads a block; BLOCKS_PER_SM blocks a multiprocessor (0: as
// many as fit; fewer make the workspace, written and read again, smaller); VEC 4: g, x and
// grad_x move as float4 where the row's address allows (a scalar head to the first 16-byte
// boundary, packs of 4, a scalar tail: any N), 1: scalar loads; CACHE (with VEC 4) packs of g
// and x a thread keeps in registers from the first pass for the second, where the row fits
// (CACHE * BLOCK_SIZE * 4 elements): every load of a row issued at once, and the row read once
// (0: the second pass reads it again, from L2). The defaults are the first version's
// structure: 256 threads, as many blocks as fit, scalar loads.
#include <evokernel.h>
#include <stdint.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 0
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef CACHE
#define CACHE 0
#endif
#ifndef SMEM_OPTIN
#define SMEM_OPTIN 0
#endif
#ifndef WS_FLOATS
#define WS_FLOATS (1 << 23)  // static workspace: 8M floats, 32 MB
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");
static_assert(BLOCKS_PER_SM >= 0 && BLOCKS_PER_SM <= 32, "BLOCKS_PER_SM must be in [0, 32]");
static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
static_assert(CACHE >= 0 && CACHE <= 8, "CACHE must be in [0, 8]");
static_assert(SMEM_OPTIN == 0 || SMEM_OPTIN == 1, "SMEM_OPTIN must be 0 or 1");

static const int kBadArgs = 1000;
#define RMS_EPS 1e-6f
#define COL_THREADS_X 32
#define COL_THREADS_Y 8
#define SMEM_DEFAULT_BYTES (48 * 1024)  // dynamic shared memory without the opt-in

__device__ float4 g_workspace[WS_FLOATS / 4];

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// What a thread keeps of a row between the two passes (CACHE > 0, V == 4): its packs of g and x.
template <int K>
struct Cache {
  float4 g[K > 0 ? K : 1], x[K > 0 ? K : 1];
};

// A row's split where V == 4: `head` scalars up to x's first 16-byte boundary, `npack` packs
// of four, the rest scalars from `tail` on.
__device__ __forceinline__ void split4(const float* xr, int64_t N, int64_t& head, int64_t& npack) {
  const int mis = (int)((reinterpret_cast<uintptr_t>(xr) >> 2) & 3);
  head = min((int64_t)((4 - mis) & 3), N);
  npack = (N - head) >> 2;
}

// f(j, gv, xv) for every element j of the thread's part of a row, in a fixed order. V == 4:
// g and x are read as float4 from the row's first 16-byte boundary on (g, x and grad_x share
// their alignment: the host checks), with the head and the tail scalar; f4(j, g4, x4) takes a
// pack of the four elements from j on. MODE 0 reads the packs from memory; 1 reads them into
// the cache too (every load issued before any is used: K packs of each in flight); 2 takes
// them from the cache (the row's packs fit: npack <= K * BLOCK_SIZE).
template <int V, int K, int MODE, class F, class F4>
__device__ __forceinline__ void each(const float* __restrict__ gr, const float* __restrict__ xr,
                                     int64_t N, Cache<K>& cache, F f, F4 f4) {
  if constexpr (V == 1) {
#pragma unroll 4
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) f(j, gr[j], xr[j]);
  } else {
    int64_t head, npack;
    split4(xr, N, head, npack);
    const int64_t tail = head + (npack << 2);
    if (threadIdx.x < head) f((int64_t)threadIdx.x, gr[threadIdx.x], xr[threadIdx.x]);
    const float4* g4 = reinterpret_cast<const float4*>(gr + head);
    const float4* x4 = reinterpret_cast<const float4*>(xr + head);
    if constexpr (MODE == 0 || K == 0) {
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < npack; i += BLOCK_SIZE) f4(head + (i << 2), g4[i], x4[i]);
    } else {
      if constexpr (MODE == 1) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int64_t i = threadIdx.x + (int64_t)k * BLOCK_SIZE;
          if (i < npack) {
            cache.g[k] = g4[i];
            cache.x[k] = x4[i];
          }
        }
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t i = threadIdx.x + (int64_t)k * BLOCK_SIZE;
        if (i < npack) f4(head + (i << 2), cache.g[k], cache.x[k]);
      }
    }
    if (tail + threadIdx.x < N) f(tail + threadIdx.x, gr[tail + threadIdx.x], xr[tail + threadIdx.x]);
  }
}

// w[j..j+3]: one float4 where A (every row starts on a 16-byte boundary, w too), else four loads.
template <bool A>
__device__ __forceinline__ float4 wpack(const float* __restrict__ w, int64_t j) {
  if constexpr (A) return reinterpret_cast<const float4*>(w)[j >> 2];
  else return make_float4(w[j], w[j + 1], w[j + 2], w[j + 3]);
}

// SMEM: accumulate the partial grad_w row in shared memory. A (with V == 4): every row starts
// on a 16-byte boundary (N % 4 == 0, x aligned) and so do w and the partial row: they move as
// float4 too (with four scalar accesses a warp's shared-memory additions conflict 4 ways).
template <bool SMEM, int V, bool A>
__global__ void __launch_bounds__(BLOCK_SIZE)
rms_bwd_rows(const float* __restrict__ g, const float* __restrict__ x,
             const float* __restrict__ w, float* __restrict__ gx, float* __restrict__ ws,
             int64_t M, int64_t N) {
  extern __shared__ float4 sh_acc4[];
  __shared__ float sh_ss[32], sh_dot[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kWarps = BLOCK_SIZE / 32;

  float* acc = SMEM ? reinterpret_cast<float*>(sh_acc4) : ws + (int64_t)blockIdx.x * N;
  // Which thread adds into a column changes from row to row where V == 4 (the head's length
  // does): the barriers of each row's reduction order every addition after the zeroing and
  // after the previous row's, so each column's sum runs in row order (deterministic).
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) acc[j] = 0.f;

  const int64_t r0 = (int64_t)blockIdx.x * M / gridDim.x;
  const int64_t r1 = ((int64_t)blockIdx.x + 1) * M / gridDim.x;
  for (int64_t row = r0; row < r1; ++row) {
    const float* gr = g + row * N;
    const float* xr = x + row * N;
    float* gxr = gx + row * N;

    float ss = 0.f, dot = 0.f;
    auto sums = [&](int64_t j, float gv, float xv) {
      ss += xv * xv;
      dot += gv * w[j] * xv;
    };
    auto sums4 = [&](int64_t j, float4 gv, float4 xv) {
      const float4 wv = wpack<A>(w, j);
      ss += xv.x * xv.x + xv.y * xv.y + xv.z * xv.z + xv.w * xv.w;
      dot += gv.x * wv.x * xv.x + gv.y * wv.y * xv.y + gv.z * wv.z * xv.z + gv.w * wv.w * xv.w;
    };
    Cache<CACHE> cache;
    bool cached = false;
    if constexpr (V == 4 && CACHE > 0) {
      int64_t head, npack;
      split4(xr, N, head, npack);
      cached = npack <= (int64_t)CACHE * BLOCK_SIZE;  // the same for every thread of the block
    }
    if (cached) each<V, CACHE, 1>(gr, xr, N, cache, sums, sums4);
    else each<V, CACHE, 0>(gr, xr, N, cache, sums, sums4);
    ss = warp_sum(ss);
    dot = warp_sum(dot);
    __syncthreads();  // the previous row's readers of sh_ss / sh_dot are done
    if (lane == 0) {
      sh_ss[warp] = ss;
      sh_dot[warp] = dot;
    }
    __syncthreads();
    // Every warp reduces the partials itself, in the same order: identical totals.
    ss = warp_sum(lane < kWarps ? sh_ss[lane] : 0.f);
    dot = warp_sum(lane < kWarps ? sh_dot[lane] : 0.f);

    const float r = rsqrtf(ss / (float)N + RMS_EPS);
    const float c = r * r * r * dot / (float)N;
    auto out = [&](int64_t j, float gv, float xv) {
      gxr[j] = r * gv * w[j] - c * xv;
      acc[j] += gv * xv * r;
    };
    auto out4 = [&](int64_t j, float4 gv, float4 xv) {
      const float4 wv = wpack<A>(w, j);
      float4 o;
      o.x = r * gv.x * wv.x - c * xv.x;
      o.y = r * gv.y * wv.y - c * xv.y;
      o.z = r * gv.z * wv.z - c * xv.z;
      o.w = r * gv.w * wv.w - c * xv.w;
      *reinterpret_cast<float4*>(gxr + j) = o;
      if constexpr (A) {  // one 16-byte access: no bank conflicts in shared memory
        float4* ap = reinterpret_cast<float4*>(acc + j);
        float4 a = *ap;
        a.x += gv.x * xv.x * r;
        a.y += gv.y * xv.y * r;
        a.z += gv.z * xv.z * r;
        a.w += gv.w * xv.w * r;
        *ap = a;
      } else {
        acc[j] += gv.x * xv.x * r;
        acc[j + 1] += gv.y * xv.y * r;
        acc[j + 2] += gv.z * xv.z * r;
        acc[j + 3] += gv.w * xv.w * r;
      }
    };
    if (cached) each<V, CACHE, 2>(gr, xr, N, cache, out, out4);
    else each<V, CACHE, 0>(gr, xr, N, cache, out, out4);
  }
  if (SMEM) {
    __syncthreads();  // the last row's additions, made by any thread
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) ws[(int64_t)blockIdx.x * N + j] = acc[j];
  }
}

// grad_w[j] = sum_{b < G} ws[b, j]: 32 columns per block, 8 threads down each column.
__global__ void __launch_bounds__(COL_THREADS_X * COL_THREADS_Y)
rms_bwd_colsum(const float* __restrict__ ws, float* __restrict__ gw, int G, int64_t N) {
  __shared__ float sh[COL_THREADS_Y][COL_THREADS_X + 1];
  const int64_t j = (int64_t)blockIdx.x * COL_THREADS_X + threadIdx.x;
  float s = 0.f;
  if (j < N)
    for (int b = threadIdx.y; b < G; b += COL_THREADS_Y) s += ws[(int64_t)b * N + j];
  sh[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < N) {
    float t = 0.f;
#pragma unroll
    for (int y = 0; y < COL_THREADS_Y; ++y) t += sh[y][threadIdx.x];
    gw[j] = t;
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

static bool same_shape(const EvkTensor* a, const EvkTensor* b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; ++i)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

// The first pass for one (SMEM, V, A): G blocks, smem_bytes of partial row.
template <bool SMEM, int V, bool A>
static cudaError_t launch_rows(int sms, int64_t M, int64_t N, size_t smem_bytes,
                               const float* gp, const float* xp, const float* wp, float* gxp,
                               float* ws, cudaStream_t stream, int64_t* G_out) {
  cudaError_t err = cudaSuccess;
  if (smem_bytes > SMEM_DEFAULT_BYTES)
    err = cudaFuncSetAttribute(rms_bwd_rows<SMEM, V, A>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int)smem_bytes);
  int per_sm = 0;
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rms_bwd_rows<SMEM, V, A>, BLOCK_SIZE,
                                                        smem_bytes);
  if (err != cudaSuccess) return err;
  if (per_sm < 1) per_sm = 1;
  if (BLOCKS_PER_SM > 0 && per_sm > BLOCKS_PER_SM) per_sm = BLOCKS_PER_SM;
  int64_t G = (int64_t)sms * per_sm;
  if (G > M) G = M;
  if (G > WS_FLOATS / N) G = WS_FLOATS / N;
  *G_out = G;
  if (G > 0)
    rms_bwd_rows<SMEM, V, A><<<(unsigned)G, BLOCK_SIZE, smem_bytes, stream>>>(gp, xp, wp, gxp, ws, M,
                                                                            N);
  return cudaGetLastError();
}

extern "C" int evk_backward(const EvkCall* call) {
  if (call->n_inputs != 3 || call->n_outputs != 2) return kBadArgs;
  const EvkTensor* g = &call->inputs[0];
  const EvkTensor* x = &call->inputs[1];
  const EvkTensor* w = &call->inputs[2];
  const EvkTensor* gx = &call->outputs[0];
  const EvkTensor* gw = &call->outputs[1];
  if (x->ndim < 1) return kBadArgs;
  for (const EvkTensor* t : {g, x, w, static_cast<const EvkTensor*>(gx),
                             static_cast<const EvkTensor*>(gw)})
    if (t->dtype != EVK_FLOAT32 || !contiguous(t)) return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  if (!same_shape(g, x) || !same_shape(gx, x) || !same_shape(gw, w)) return kBadArgs;
  if (w->ndim != 1 || w->shape[0] != N) return kBadArgs;
  if (N == 0) return 0;
  const int64_t M = evk_numel(x) / N;

  int dev = 0, sms = 132, optin = SMEM_DEFAULT_BYTES;
  cudaError_t err = cudaGetDevice(&dev);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (err != cudaSuccess) return (int)err;

  const float* gp = static_cast<const float*>(g->data);
  const float* xp = static_cast<const float*>(x->data);
  const float* wp = static_cast<const float*>(w->data);
  float* gxp = static_cast<float*>(gx->data);
  float* gwp = static_cast<float*>(gw->data);

  if (N > WS_FLOATS) {
    // One row is longer than the static workspace: a single block owns every row, so its
    // partial row is grad_w itself and no second pass is needed. Slow, but such rows are
    // far outside any configuration.
    if (M == 0) return (int)cudaMemsetAsync(gwp, 0, (size_t)N * sizeof(float), call->stream);
    rms_bwd_rows<false, 1, false><<<1, BLOCK_SIZE, 0, call->stream>>>(gp, xp, wp, gxp, gwp, M, N);
    return (int)cudaGetLastError();
  }

  float* ws = nullptr;
  err = cudaGetSymbolAddress(reinterpret_cast<void**>(&ws), g_workspace);
  if (err != cudaSuccess) return (int)err;

  // float4 packs where g, x and grad_x fall alike on 16-byte boundaries (the same offset in
  // every row then), else scalar; the partial row in shared memory where it fits beside the
  // kernel's own 256 bytes
  const uintptr_t gi = reinterpret_cast<uintptr_t>(gp), xi = reinterpret_cast<uintptr_t>(xp),
                  oi = reinterpret_cast<uintptr_t>(gxp);
  const bool vec = VEC == 4 && ((gi ^ xi) & 15) == 0 && ((oi ^ xi) & 15) == 0;
  const size_t row_bytes = (size_t)N * sizeof(float);
  const bool smem = SMEM_OPTIN ? row_bytes + 256 <= (size_t)optin : row_bytes <= SMEM_DEFAULT_BYTES;
  const size_t smem_bytes = smem ? row_bytes : 0;
  const bool aligned = vec && (xi & 15) == 0 && (reinterpret_cast<uintptr_t>(wp) & 15) == 0 &&
                       (N & 3) == 0;
  int64_t G = 0;
  cudaStream_t st = call->stream;
  if (smem && aligned) err = launch_rows<true, 4, true>(sms, M, N, smem_bytes, gp, xp, wp, gxp, ws, st, &G);
  else if (smem && vec) err = launch_rows<true, 4, false>(sms, M, N, smem_bytes, gp, xp, wp, gxp, ws, st, &G);
  else if (smem) err = launch_rows<true, 1, false>(sms, M, N, smem_bytes, gp, xp, wp, gxp, ws, st, &G);
  else if (aligned) err = launch_rows<false, 4, true>(sms, M, N, 0, gp, xp, wp, gxp, ws, st, &G);
  else if (vec) err = launch_rows<false, 4, false>(sms, M, N, 0, gp, xp, wp, gxp, ws, st, &G);
  else err = launch_rows<false, 1, false>(sms, M, N, 0, gp, xp, wp, gxp, ws, st, &G);
  if (err != cudaSuccess) return (int)err;
  // With no rows (G == 0) this writes grad_w = 0.
  const int64_t col_blocks = (N + COL_THREADS_X - 1) / COL_THREADS_X;
  rms_bwd_colsum<<<(unsigned)col_blocks, dim3(COL_THREADS_X, COL_THREADS_Y), 0, call->stream>>>(
      ws, gwp, (int)G, N);
  return (int)cudaGetLastError();
}
