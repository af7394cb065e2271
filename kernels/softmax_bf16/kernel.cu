// Row softmax over the last dimension, bf16 in and out, fp32 arithmetic: a template. Its compile-time knobs (task.json
// "tunables", passed as -D; "constraints" says which combinations exist) choose among the
// structures that make such kernels fast:
//   THREADS_PER_ROW  threads that share a row: 32 is a warp per row, 1024 a block per row
//   ROWS_PER_BLOCK   rows a block takes at once (its size is the product of the two)
//   VEC              elements a load or store moves: 1, or 2 or 8 (4 or 16 bytes) (16 bytes, where the row's
//                    address allows: a scalar head and tail around the packs; x and y not
//                    aligned alike: 1)
//   ONLINE           1: one pass keeps a running (max, sum of exp) pair; 0: the max, then the sum
//   CACHE            0: each pass reads the row from global memory (L2 after the first);
//                    1: the row stays in registers (128 bytes a thread at most); 2: in shared
//                    memory. A row that does not fit is read again, as with 0.
//   UNROLL           unroll factor of the loops over memory
//   EXP2             1: exp(v - m) as exp2f((v - m) * log2(e)), the hardware's base-2
//                    exponential (2 ulp) without expf's argument scaling; 0: expf
// The defaults are the first version's structure: a 256-thread block per row, bf16x2 loads, one
// online pass, the row read again for the write. exp(x - max) is multiplied by 1 / sum.
#include <evokernel.h>
#include <cuda_bf16.h>
#include <math.h>

#ifndef EXP2
#define EXP2 0
#endif
static_assert(EXP2 == 0 || EXP2 == 1, "EXP2 must be 0 or 1");

#ifndef THREADS_PER_ROW
#define THREADS_PER_ROW 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef ONLINE
#define ONLINE 1
#endif
#ifndef CACHE
#define CACHE 0
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

typedef __nv_bfloat16 E;  // the element type
static const int kDtype = EVK_BFLOAT16;
static_assert(VEC == 1 || VEC == 2 || VEC == 8, "VEC must be 1, 2 or 8");
static_assert(ONLINE == 0 || ONLINE == 1, "ONLINE must be 0 or 1");
static const int kBadArgs = 1000;

// element type E ↔ fp32 (the arithmetic is fp32 throughout; one rounding per output)
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ---- row toolkit: the same text in each row kernel of kernels/ (test/kernels/templates.test.ts) ----
// A row of N elements of type E is shared by kGroup threads (g: a thread's place in its group).
// Loads and stores move V elements (16 bytes when V > 1) where the row's address allows: a
// scalar head up to the first 16-byte boundary, packs of V, a scalar tail. Row<V, C> keeps what
// a thread owns of its row: C = 0 nowhere (read from global memory each time), 1 in
// registers (kCacheBytes a thread at most), 2 in shared memory.
constexpr int kGroup = THREADS_PER_ROW;
constexpr int kRows = ROWS_PER_BLOCK;
constexpr int kBlock = kGroup * kRows;
constexpr int kUnroll = UNROLL;
constexpr int kWarps = kGroup >= 32 ? kGroup / 32 : 1;  // warps in a row's group
constexpr int kCacheBytes = 128;                        // register cache: bytes a thread
static_assert(kGroup >= 1 && kGroup <= 1024 && (kGroup & (kGroup - 1)) == 0,
              "THREADS_PER_ROW must be a power of two in [1, 1024]");
static_assert(kRows >= 1 && kBlock <= 1024 && kBlock >= 32,
              "THREADS_PER_ROW * ROWS_PER_BLOCK must be in [32, 1024]");
static_assert(CACHE >= 0 && CACHE <= 2, "CACHE must be 0, 1 or 2");
static_assert(kUnroll >= 1 && kUnroll <= 16, "UNROLL must be in [1, 16]");


template <class E, int V>
struct alignas(sizeof(E) * V) Pack {
  E e[V];
};
template <int N> struct Int {
  static constexpr int value = N;
};

// Every thread of the block calls it (it may hold __syncthreads); every thread of a group gets
// the same value: the group's first lane's, or the warps' partials read in one order.
template <class T, class Op>
__device__ __forceinline__ T group_reduce(T v, Op op) {
  constexpr int width = kGroup < 32 ? kGroup : 32;
  #pragma unroll
  for (int o = width / 2; o > 0; o >>= 1) v = op(v, T::shfl_xor(v, o));
  const int lane = threadIdx.x & 31;
  v = T::shfl_from(v, lane & ~(width - 1));
  if constexpr (kGroup > 32) {
    __shared__ T sh[kRows * kWarps];
    const int r = threadIdx.x / kGroup, w = (threadIdx.x % kGroup) >> 5;
    if (lane == 0) sh[r * kWarps + w] = v;
    __syncthreads();
    v = sh[r * kWarps];
    #pragma unroll
    for (int i = 1; i < kWarps; ++i) v = op(v, sh[r * kWarps + i]);
    __syncthreads();  // sh is free for the next reduction
  }
  return v;
}
struct F1 {
  float a;
  static __device__ __forceinline__ F1 shfl_xor(F1 v, int o) { return {__shfl_xor_sync(0xffffffffu, v.a, o)}; }
  static __device__ __forceinline__ F1 shfl_from(F1 v, int s) { return {__shfl_sync(0xffffffffu, v.a, s)}; }
};
struct SumOp {
  __device__ __forceinline__ F1 operator()(F1 x, F1 y) const { return {x.a + y.a}; }
};
struct MaxOp {
  __device__ __forceinline__ F1 operator()(F1 x, F1 y) const { return {fmaxf(x.a, y.a)}; }
};

// How a row splits: `head` scalars up to the first 16-byte boundary, `npack` packs, the rest
// scalars from `tail` on.
struct Split {
  int head;
  int64_t npack, tail;
};
template <class E, int V>
__device__ __forceinline__ Split split_of(const E* row, int64_t N) {
  Split s;
  if (V == 1) {
    s.head = 0;
    s.npack = N;
  } else {
    // elements past the last pack boundary (a pack is V elements: 16 bytes, or 4 for bf16x2)
    const int mis = (int)((reinterpret_cast<uintptr_t>(row) % (sizeof(E) * V)) / sizeof(E));
    s.head = (int)min((int64_t)((V - mis) % V), N);
    s.npack = (N - s.head) / V;
  }
  s.tail = s.head + s.npack * V;
  return s;
}

template <class E, int V, int C>
struct Row {
  static constexpr int kItems = C == 1 ? kCacheBytes / (int)sizeof(E) / V : 1;
  const E* xr;
  int64_t N;
  Split sp;
  int g;
  Pack<E, V> reg[kItems];
  E head_v, tail_v;
  E* srow;

  // Reads the thread's elements into the cache (C = 1, 2); smem: this group's row in shared memory.
  __device__ __forceinline__ void load(const E* row, int64_t n, int place, E* smem) {
    xr = row;
    N = n;
    g = place;
    sp = split_of<E, V>(row, n);
    if (C == 2) srow = smem + (V == 1 ? 0 : (V - sp.head) % V);  // packs on 16-byte boundaries
    if (C == 0) return;
    if (V > 1 && g < sp.head) head_v = xr[g];
    if (V > 1 && sp.tail + g < N) tail_v = xr[sp.tail + g];
    const Pack<E, V>* xp = reinterpret_cast<const Pack<E, V>*>(xr + sp.head);
    if (C == 1) {
      #pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int64_t i = g + (int64_t)k * kGroup;
        if (i < sp.npack) reg[k] = xp[i];
      }
    } else {
      Pack<E, V>* sp_ = reinterpret_cast<Pack<E, V>*>(srow + sp.head);
      #pragma unroll kUnroll
      for (int64_t i = g; i < sp.npack; i += kGroup) sp_[i] = xp[i];
    }
  }

  // f(Int<n>, const float* values, j): n values of the row from element j on (n is V for a
  // pack, 1 for a head or tail element), in the thread's order, from the cache or memory.
  template <class F>
  __device__ __forceinline__ void each(F f) const {
    float a[V];
    if (V > 1 && g < sp.head) {
      a[0] = to_f(C == 0 ? xr[g] : head_v);
      f(Int<1>(), a, (int64_t)g);
    }
    if (C == 1) {
      #pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int64_t i = g + (int64_t)k * kGroup;
        if (i < sp.npack) {
          #pragma unroll
          for (int e = 0; e < V; ++e) a[e] = to_f(reg[k].e[e]);
          f(Int<V>(), a, sp.head + i * V);
        }
      }
    } else {
      const Pack<E, V>* xp = reinterpret_cast<const Pack<E, V>*>((C == 2 ? srow : xr) + sp.head);
      #pragma unroll kUnroll
      for (int64_t i = g; i < sp.npack; i += kGroup) {
        const Pack<E, V> p = xp[i];
        #pragma unroll
        for (int e = 0; e < V; ++e) a[e] = to_f(p.e[e]);
        f(Int<V>(), a, sp.head + i * V);
      }
    }
    if (V > 1 && sp.tail + g < N) {
      a[0] = to_f(C == 0 ? xr[sp.tail + g] : tail_v);
      f(Int<1>(), a, sp.tail + g);
    }
  }
};

// Writes n values (a pack when n == V: j is then on a 16-byte boundary of the output row).
template <class E, int V, int n>
__device__ __forceinline__ void store(E* yr, int64_t j, const float* v) {
  if constexpr (n == V && V > 1) {
    Pack<E, V> p;
    #pragma unroll
    for (int e = 0; e < V; ++e) p.e[e] = from_f<E>(v[e]);
    *reinterpret_cast<Pack<E, V>*>(yr + j) = p;
  } else {
    #pragma unroll
    for (int e = 0; e < n; ++e) yr[j + e] = from_f<E>(v[e]);
  }
}

// The cache a call can use: CACHE when a row fits (registers: every pack of a thread; shared
// memory: kRows rows within the device's opt-in limit), else 0. *sstride: elements per row in
// shared memory; *smem: dynamic shared memory bytes.
template <class E>
static int cache_for(int64_t N, int v, int64_t* sstride, size_t* smem) {
  *sstride = 0;
  *smem = 0;
  if (CACHE == 1) return N / v <= (int64_t)(kCacheBytes / (int)sizeof(E) / v) * kGroup ? 1 : 0;
  if (CACHE == 2) {
    int dev = 0, optin = 48 * 1024;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
      return 0;
    const int64_t per16 = 16 / (int64_t)sizeof(E);
    const int64_t stride = (N + per16 - 1 + per16 - 1) / per16 * per16;  // room for the alignment offset
    const int64_t bytes = stride * kRows * (int64_t)sizeof(E);
    if (bytes > optin) return 0;
    *sstride = stride;
    *smem = (size_t)bytes;
    return 2;
  }
  return 0;
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

[[maybe_unused]] static bool same16(const void* a, const void* b) {
  return reinterpret_cast<uintptr_t>(a) % 16 == reinterpret_cast<uintptr_t>(b) % 16;
}
// ---- end of the row toolkit ----

// exp(v - m)
__device__ __forceinline__ float exp_from(float v, float m) {
  if (EXP2) return exp2f((v - m) * 1.4426950408889634f);
  return expf(v - m);
}

// A (max, sum of exp(v - max)) pair; the empty pair is (-inf, 0).
struct MS {
  float m, s;
  static __device__ __forceinline__ MS shfl_xor(MS v, int o) {
    return {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
  }
  static __device__ __forceinline__ MS shfl_from(MS v, int s) {
    return {__shfl_sync(0xffffffffu, v.m, s), __shfl_sync(0xffffffffu, v.s, s)};
  }
};
struct MergeOp {
  __device__ __forceinline__ MS operator()(MS a, MS b) const {
    const float mn = fmaxf(a.m, b.m);
    if (mn == -INFINITY) return a;  // both empty
    return {mn, a.s * exp_from(a.m, mn) + b.s * exp_from(b.m, mn)};
  }
};
__device__ __forceinline__ void push(MS& p, float v) {
  if (v > p.m) {
    p.s = p.s * exp_from(p.m, v) + 1.f;
    p.m = v;
  } else {
    p.s += exp_from(v, p.m);
  }
}

// The row's max and sum of exp(x - max), in every thread of its group.
template <class R>
__device__ __forceinline__ MS row_stats(const R& rw, bool active) {
  if (ONLINE) {
    MS p = {-INFINITY, 0.f};
    if (active)
      rw.each([&](auto n, const float* a, int64_t) {
        #pragma unroll
        for (int e = 0; e < decltype(n)::value; ++e) push(p, a[e]);
      });
    return group_reduce(p, MergeOp());
  }
  float m = -INFINITY;
  if (active)
    rw.each([&](auto n, const float* a, int64_t) {
      #pragma unroll
      for (int e = 0; e < decltype(n)::value; ++e) m = fmaxf(m, a[e]);
    });
  m = group_reduce(F1{m}, MaxOp()).a;
  float s = 0.f;
  if (active)
    rw.each([&](auto n, const float* a, int64_t) {
      #pragma unroll
      for (int e = 0; e < decltype(n)::value; ++e) s += exp_from(a[e], m);
    });
  return {m, group_reduce(F1{s}, SumOp()).a};
}

template <int V, int C>
__global__ void __launch_bounds__(kBlock)
softmax_rows(const E* __restrict__ x, E* __restrict__ y, int64_t M, int64_t N, int64_t sstride) {
  extern __shared__ float4 smem4[];
  const int r = threadIdx.x / kGroup;
  const int64_t row = (int64_t)blockIdx.x * kRows + r;
  const bool active = row < M;  // inactive threads still take part in every reduction
  Row<E, V, C> rw;
  if (active) rw.load(x + row * N, N, threadIdx.x % kGroup, reinterpret_cast<E*>(smem4) + r * sstride);
  const MS st = row_stats(rw, active);
  if (!active) return;  // no reduction below
  const float mx = st.m, inv = 1.f / st.s;
  E* yr = y + row * N;
  rw.each([&](auto n, const float* a, int64_t j) {
    constexpr int cnt = decltype(n)::value;
    float o[cnt];
    #pragma unroll
    for (int e = 0; e < cnt; ++e) o[e] = exp_from(a[e], mx) * inv;
    store<E, V, cnt>(yr, j, o);
  });
}

template <int V, int C>
static int launch(const E* x, E* y, int64_t M, int64_t N, int64_t sstride, size_t smem, cudaStream_t stream) {
  if (smem > 48 * 1024) {
    const cudaError_t err =
        cudaFuncSetAttribute(softmax_rows<V, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess) return (int)err;
  }
  const int64_t blocks = (M + kRows - 1) / kRows;
  softmax_rows<V, C><<<(unsigned)blocks, kBlock, smem, stream>>>(x, y, M, N, sstride);
  return (int)cudaGetLastError();
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->ndim < 1 || x->dtype != kDtype || y->dtype != kDtype) return kBadArgs;
  if (y->ndim != x->ndim) return kBadArgs;
  for (int i = 0; i < x->ndim; ++i)
    if (x->shape[i] != y->shape[i]) return kBadArgs;
  if (!contiguous(x) || !contiguous(y)) return kBadArgs;

  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;  // all leading dims are rows
  if (M == 0 || N == 0) return 0;
  if ((M + kRows - 1) / kRows > 0x7fffffff) return kBadArgs;

  const auto* xp = static_cast<const E*>(x->data);
  auto* yp = static_cast<E*>(y->data);
  // packs only when every row of x and of y splits the same way
  const bool vec = VEC > 1 && same16(xp, yp);
  int64_t sstride;
  size_t smem;
  const int c = cache_for<E>(N, vec ? VEC : 1, &sstride, &smem);
  if (vec) {
    if (c == 1) return launch<VEC, CACHE == 1 ? 1 : 0>(xp, yp, M, N, sstride, smem, call->stream);
    if (c == 2) return launch<VEC, CACHE == 2 ? 2 : 0>(xp, yp, M, N, sstride, smem, call->stream);
    return launch<VEC, 0>(xp, yp, M, N, sstride, smem, call->stream);
  }
  if (c == 1) return launch<1, CACHE == 1 ? 1 : 0>(xp, yp, M, N, sstride, smem, call->stream);
  if (c == 2) return launch<1, CACHE == 2 ? 2 : 0>(xp, yp, M, N, sstride, smem, call->stream);
  return launch<1, 0>(xp, yp, M, N, sstride, smem, call->stream);
}
