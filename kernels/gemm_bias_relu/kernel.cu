// Baseline: C = relu(A @ W^T + b), A [M, K], W [N, K], b [N], fp32 in and out, fp32-accurate.
// A template: its compile-time knobs (task.json "tunables", passed as -D) are
//   MATH  0: fp32 FMA on the CUDA cores (the first version); 1: 3xTF32 on the tensor cores.
//         3xTF32 splits every operand x into big = tf32(x) and small = tf32(x - big) and adds
//         small*big + big*small + big*big, each an mma.sync m16n8k8 TF32 product, into an
//         fp32 accumulator of each k8 step's own, added to the total with a rounded fp32 add
//         (the tensor core's accumulation rounds toward zero: in place over a long K its bias
//         grows with K). What is dropped (small*small, and small's own rounding) is about
//         2^-22 of each product, the order of fp32's own rounding; plain TF32 (2^-11) is not used.
//   SPLIT (MATH 1) 0: each warp splits the operands it reads from shared memory; 1: they are
//         split once, as a tile is stored, and shared memory holds big and small apart
//   STAGES (MATH 1) 2: the next tile through registers (stored, split with SPLIT 1, after the
//         current one's products); 3, 4: tiles copied straight to shared memory (cp.async),
//         STAGES - 1 of them in flight while one is multiplied
//   BM, BN, BK  the block's tile of C (BM x BN) and the K step through shared memory.
// MATH 0: classic shared-memory tiled SGEMM with register blocking: a block computes a BM x BN
// tile of C with (BM/8) x (BN/8) threads, each owning an 8 x 8 sub-tile (two 4-row halves x two
// 4-column halves, so shared-memory float4 reads are free of bank conflicts). MATH 1: 256
// threads, 2 x 4 warps, each a (BM/2) x (BN/4) tile of m16n8 fragments; A and W stay row-major
// in shared memory with rows of BK + 4 floats (fragment reads free of bank conflicts).
// The K loop steps BK at a time: with STAGES 2 (and MATH 0) through two shared-memory buffers,
// the next tile fetched into registers while the current one is multiplied; with STAGES 3 or 4
// through that many, by cp.async. Loads are float4 when K % 4 == 0 and the pointers are 16-byte
// aligned, scalar otherwise; every load and store is bounds-checked, so any M, N, K works. Bias
// and ReLU are applied in the epilogue. On the H100 (2026-11-27) MATH 1 SPLIT 1 STAGES 2 at
// 128 x 128 x 8 was the fastest on large shapes: 1.07-1.09x MATH 0, 0.96x cuBLAS's SGEMM.
#include <evokernel.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef MATH
#define MATH 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
static_assert(MATH == 0 || MATH == 1, "MATH must be 0 (fp32 FMA) or 1 (3xTF32)");
static_assert(SPLIT == 0 || SPLIT == 1, "SPLIT must be 0 or 1");
static_assert(STAGES >= 2 && STAGES <= 4, "STAGES must be 2, 3 or 4");
static_assert(STAGES == 2 || SPLIT == 0, "STAGES 3 and 4 copy tiles as they are: SPLIT 0");
#if MATH == 0
#define THREADS ((BM / 8) * (BN / 8))
#else
#define THREADS 256
#endif
#define PAD 4  // keeps rows 16-byte aligned and spreads the transposed stores over banks

static_assert(BM % 8 == 0 && BN % 8 == 0 && BK % 4 == 0, "BM, BN multiples of 8; BK of 4");
static_assert(THREADS >= 32 && THREADS <= 1024, "(BM/8)*(BN/8) threads must be in [32, 1024]");

static const int kBadArgs = 1000;

#if MATH == 0  // fp32 FMA on the CUDA cores

static_assert((BM * BK / 4) % THREADS == 0 && (BN * BK / 4) % THREADS == 0,
              "tile loads must divide evenly among the threads");
constexpr int kLoadsA = BM * BK / 4 / THREADS;  // 4-element groups per thread per tile
constexpr int kLoadsW = BN * BK / 4 / THREADS;
constexpr int kGroupsPerRow = BK / 4;

// Fetch the rows [r0, r0 + R) x columns [k0, k0 + BK) of a row-major [rows, K] matrix into
// registers, 4 consecutive k per group, zero outside the matrix.
template <int R, int LOADS, bool VEC>
__device__ __forceinline__ void fetch(const float* __restrict__ src, int64_t rows, int64_t K,
                                      int64_t r0, int64_t k0, float (&reg)[LOADS][4]) {
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = threadIdx.x + l * THREADS;
    const int64_t r = r0 + idx / kGroupsPerRow;
    const int64_t k = k0 + (idx % kGroupsPerRow) * 4;
    if (VEC) {
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (r < rows && k < K) v = *reinterpret_cast<const float4*>(src + r * K + k);
      reg[l][0] = v.x; reg[l][1] = v.y; reg[l][2] = v.z; reg[l][3] = v.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) reg[l][i] = (r < rows && k + i < K) ? src[r * K + k + i] : 0.f;
    }
  }
}

// Store fetched groups transposed: tile[k][row].
template <int R, int LOADS>
__device__ __forceinline__ void stash(float (*tile)[R + PAD], const float (&reg)[LOADS][4]) {
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = threadIdx.x + l * THREADS;
    const int r = idx / kGroupsPerRow;
    const int k = (idx % kGroupsPerRow) * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) tile[k + i][r] = reg[l][i];
  }
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
gemm_bias_relu(const float* __restrict__ A, const float* __restrict__ W,
               const float* __restrict__ bias, float* __restrict__ C, int64_t M, int64_t N,
               int64_t K) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];
  __shared__ __align__(16) float Ws[2][BK][BN + PAD];

  const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
  const int tx = threadIdx.x % (BN / 8), ty = threadIdx.x / (BN / 8);

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  float ra[kLoadsA][4], rw[kLoadsW][4];
  const int64_t tiles = (K + BK - 1) / BK;
  fetch<BM, kLoadsA, VEC>(A, M, K, m0, 0, ra);
  fetch<BN, kLoadsW, VEC>(W, N, K, n0, 0, rw);
  stash<BM, kLoadsA>(As[0], ra);
  stash<BN, kLoadsW>(Ws[0], rw);
  __syncthreads();

  for (int64_t t = 0; t < tiles; ++t) {
    const int cur = (int)(t & 1);
    const bool more = t + 1 < tiles;
    if (more) {
      fetch<BM, kLoadsA, VEC>(A, M, K, m0, (t + 1) * BK, ra);
      fetch<BN, kLoadsW, VEC>(W, N, K, n0, (t + 1) * BK, rw);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[8], w[8];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][k][BM / 2 + ty * 4]);
      const float4 w0 = *reinterpret_cast<const float4*>(&Ws[cur][k][tx * 4]);
      const float4 w1 = *reinterpret_cast<const float4*>(&Ws[cur][k][BN / 2 + tx * 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
      a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      w[0] = w0.x; w[1] = w0.y; w[2] = w0.z; w[3] = w0.w;
      w[4] = w1.x; w[5] = w1.y; w[6] = w1.z; w[7] = w1.w;
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);
    }
    // The other buffer was last read in the previous iteration, before its barrier.
    if (more) {
      stash<BM, kLoadsA>(As[cur ^ 1], ra);
      stash<BN, kLoadsW>(Ws[cur ^ 1], rw);
    }
    __syncthreads();
  }

  // Epilogue: row i of the sub-tile is m0 + (i < 4 ? ty*4 + i : BM/2 + ty*4 + i - 4), and
  // likewise for columns.
  float bv[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int64_t n = n0 + (j < 4 ? tx * 4 + j : BN / 2 + tx * 4 + (j - 4));
    bv[j] = n < N ? bias[n] : 0.f;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t m = m0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4));
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t n = n0 + (j < 4 ? tx * 4 + j : BN / 2 + tx * 4 + (j - 4));
      if (n < N) C[m * N + n] = fmaxf(acc[i][j] + bv[j], 0.f);
    }
  }
}

#else  // MATH == 1: 3xTF32 on the tensor cores

constexpr int kWarpsM = 2, kWarpsN = 4;               // 8 warps: THREADS
constexpr int kWTM = BM / kWarpsM, kWTN = BN / kWarpsN;  // a warp's tile of C
constexpr int kMT = kWTM / 16, kNT = kWTN / 8;         // its m16n8 fragments
constexpr int kLD = BK + 4;                            // floats per shared-memory row
constexpr int kGroupsPerRow = BK / 4;                  // 4-element groups per row of a tile
constexpr int kLoadsA = (BM * kGroupsPerRow + THREADS - 1) / THREADS;
constexpr int kLoadsW = (BN * kGroupsPerRow + THREADS - 1) / THREADS;
constexpr int kPlanes = SPLIT ? 2 : 1;  // SPLIT 1: shared memory holds big and small apart
constexpr int kBufFloats = kPlanes * (BM + BN) * kLD;  // one of the STAGES buffers
constexpr size_t kSmemBytes = STAGES * kBufFloats * sizeof(float);
static_assert(kWTM % 16 == 0 && kWTN % 8 == 0, "BM a multiple of 32, BN of 32");
static_assert(BK % 8 == 0, "MATH 1 steps K by 8: BK a multiple of 8");

// Fetch the rows [r0, r0 + R) x columns [k0, k0 + BK) of a row-major [rows, K] matrix into
// registers, 4 consecutive k per group, zero outside the matrix.
template <int R, int LOADS, bool VEC>
__device__ __forceinline__ void fetch(const float* __restrict__ src, int64_t rows, int64_t K,
                                      int64_t r0, int64_t k0, float4 (&reg)[LOADS]) {
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = threadIdx.x + l * THREADS;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    const int64_t r = r0 + idx / kGroupsPerRow;
    const int64_t k = k0 + (idx % kGroupsPerRow) * 4;
    if (idx < R * kGroupsPerRow && r < rows) {
      const float* p = src + r * K;
      if (VEC) {
        if (k < K) v = *reinterpret_cast<const float4*>(p + k);
      } else {
        v.x = k < K ? p[k] : 0.f;
        v.y = k + 1 < K ? p[k + 1] : 0.f;
        v.z = k + 2 < K ? p[k + 2] : 0.f;
        v.w = k + 3 < K ? p[k + 3] : 0.f;
      }
    }
    reg[l] = v;
  }
}

// x = big + small, each rounded to TF32 (to nearest, ties away); a non-finite x keeps small 0,
// so an infinity stays an infinity
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(x));
  const float rest = isfinite(x) ? x - __uint_as_float(big) : 0.f;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(small) : "f"(rest));
}
__device__ __forceinline__ void split4(float4 v, float4& big, float4& small) {
  uint32_t b[4], s[4];
  split(v.x, b[0], s[0]);
  split(v.y, b[1], s[1]);
  split(v.z, b[2], s[2]);
  split(v.w, b[3], s[3]);
  big = make_float4(__uint_as_float(b[0]), __uint_as_float(b[1]), __uint_as_float(b[2]), __uint_as_float(b[3]));
  small = make_float4(__uint_as_float(s[0]), __uint_as_float(s[1]), __uint_as_float(s[2]), __uint_as_float(s[3]));
}

// Store fetched groups as they are (tile[row][k]); SPLIT 1: big into the first plane, small
// into the second (R rows further on).
template <int R, int LOADS>
__device__ __forceinline__ void stash(float* tile, const float4 (&reg)[LOADS]) {
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = threadIdx.x + l * THREADS;
    if (idx < R * kGroupsPerRow) {
      float* at = tile + (idx / kGroupsPerRow) * kLD + (idx % kGroupsPerRow) * 4;
      if (SPLIT) {
        float4 big, small;
        split4(reg[l], big, small);
        *reinterpret_cast<float4*>(at) = big;
        *reinterpret_cast<float4*>(at + R * kLD) = small;
      } else {
        *reinterpret_cast<float4*>(at) = reg[l];
      }
    }
  }
}

// The element at (row, k) of a tile of R rows, split (from the planes, or here)
template <int R>
__device__ __forceinline__ void split_at(const float* tile, int row, int k, uint32_t& big, uint32_t& small) {
  if (SPLIT) {
    big = __float_as_uint(tile[row * kLD + k]);
    small = __float_as_uint(tile[(R + row) * kLD + k]);
  } else {
    split(tile[row * kLD + k], big, small);
  }
}

// d += a * b: one m16n8k8 TF32 tensor-core product, fp32 accumulation
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// acc += a * b over one k8 step, 3xTF32. The tensor core rounds each accumulation toward zero
// (measured on the H100: accumulated in place over K = 4096, the error grew with K to 2.9e-5
// of the norm, biased); so the step's three products go into a fresh accumulator, small
// enough that its rounding is far below acc's, which then takes it with a rounded fp32 add.
__device__ __forceinline__ void mma3(float (&acc)[4], const uint32_t (&ab)[4], const uint32_t (&as)[4],
                                     const uint32_t (&bb)[2], const uint32_t (&bs)[2]) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  mma(d, as, bb);  // the small terms first
  mma(d, ab, bs);
  mma(d, ab, bb);
#pragma unroll
  for (int e = 0; e < 4; ++e) acc[e] += d[e];
}

// cp.async: n bytes (16 or 4) from global to shared memory, zeros where full is false (then
// src is only a valid address, never read)
template <int n>
__device__ __forceinline__ void copy_async(float* dst, const float* src, bool full) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  if constexpr (n == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(full ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(full ? 4 : 0));
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int n>
__device__ __forceinline__ void copy_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(n)); }

// Rows [r0, r0 + R) x columns [k0, k0 + BK) of a row-major [rows, K] matrix into tile[row][k]
// by cp.async, zero outside the matrix (LOADS groups a thread, as fetch)
template <int R, int LOADS, bool VEC>
__device__ __forceinline__ void copy_tile(float* tile, const float* __restrict__ src, int64_t rows,
                                          int64_t K, int64_t r0, int64_t k0) {
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = threadIdx.x + l * THREADS;
    if (idx >= R * kGroupsPerRow) break;
    const int64_t r = r0 + idx / kGroupsPerRow, k = k0 + (idx % kGroupsPerRow) * 4;
    float* dst = tile + (idx / kGroupsPerRow) * kLD + (idx % kGroupsPerRow) * 4;
    if (VEC) {
      const bool full = r < rows && k < K;
      copy_async<16>(dst, full ? src + r * K + k : src, full);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool full = r < rows && k + e < K;
        copy_async<4>(dst + e, full ? src + r * K + k + e : src, full);
      }
    }
  }
}

// acc += the products of one BK tile in shared memory (As: kPlanes x BM rows, Ws: kPlanes x BN)
__device__ __forceinline__ void tile_products(float (&acc)[kMT][kNT][4], const float* As, const float* Ws,
                                              int wm, int wn, int g, int t) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    // B fragment (k x n, "col"): b0 at (k = t, n = g), b1 at (k = t + 4, n = g)
    uint32_t bb[kNT][2], bs[kNT][2];
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      split_at<BN>(Ws, wn + j * 8 + g, kk + t, bb[j][0], bs[j][0]);
      split_at<BN>(Ws, wn + j * 8 + g, kk + t + 4, bb[j][1], bs[j][1]);
    }
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      // A fragment (m x k, "row"): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
      const int r = wm + i * 16 + g;
      uint32_t ab[4], as[4];
      split_at<BM>(As, r, kk + t, ab[0], as[0]);
      split_at<BM>(As, r + 8, kk + t, ab[1], as[1]);
      split_at<BM>(As, r, kk + t + 4, ab[2], as[2]);
      split_at<BM>(As, r + 8, kk + t + 4, ab[3], as[3]);
#pragma unroll
      for (int j = 0; j < kNT; ++j) mma3(acc[i][j], ab, as, bb[j], bs[j]);
    }
  }
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
gemm_bias_relu(const float* __restrict__ A, const float* __restrict__ W,
               const float* __restrict__ bias, float* __restrict__ C, int64_t M, int64_t N,
               int64_t K) {
  // STAGES buffers, each [A: kPlanes x BM rows][W: kPlanes x BN rows] of kLD floats
  extern __shared__ float4 smem4[];
  float* const smem = reinterpret_cast<float*>(smem4);

  const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = (warp / kWarpsN) * kWTM, wn = (warp % kWarpsN) * kWTN;
  const int g = lane >> 2, t = lane & 3;  // the fragments' group and place in it

  float acc[kMT][kNT][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  const int64_t tiles = (K + BK - 1) / BK;
  if constexpr (STAGES == 2) {
    float4 ra[kLoadsA], rw[kLoadsW];
    fetch<BM, kLoadsA, VEC>(A, M, K, m0, 0, ra);
    fetch<BN, kLoadsW, VEC>(W, N, K, n0, 0, rw);
    stash<BM, kLoadsA>(smem, ra);
    stash<BN, kLoadsW>(smem + kPlanes * BM * kLD, rw);
    __syncthreads();
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int cur = (int)(tile & 1);
      const bool more = tile + 1 < tiles;
      const float* As = smem + cur * kBufFloats;
      if (more) {
        fetch<BM, kLoadsA, VEC>(A, M, K, m0, (tile + 1) * BK, ra);
        fetch<BN, kLoadsW, VEC>(W, N, K, n0, (tile + 1) * BK, rw);
      }
      tile_products(acc, As, As + kPlanes * BM * kLD, wm, wn, g, t);
      // The other buffer was last read in the previous iteration, before its barrier.
      if (more) {
        float* next = smem + (cur ^ 1) * kBufFloats;
        stash<BM, kLoadsA>(next, ra);
        stash<BN, kLoadsW>(next + kPlanes * BM * kLD, rw);
      }
      __syncthreads();
    }
  } else {
    // tiles 0 .. STAGES - 2 in flight; one group committed per tile (empty past the last), so
    // waiting until STAGES - 2 groups remain means the tile about to be multiplied has landed
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < tiles) {
        float* buf = smem + s * kBufFloats;
        copy_tile<BM, kLoadsA, VEC>(buf, A, M, K, m0, (int64_t)s * BK);
        copy_tile<BN, kLoadsW, VEC>(buf + BM * kLD, W, N, K, n0, (int64_t)s * BK);
      }
      copy_commit();
    }
    for (int64_t tile = 0; tile < tiles; ++tile) {
      copy_wait<STAGES - 2>();
      // every thread's copies of this tile have landed, and every warp is done with the
      // buffer the next copy overwrites (the previous tile's)
      __syncthreads();
      const int64_t ahead = tile + STAGES - 1;
      if (ahead < tiles) {
        float* buf = smem + (int)(ahead % STAGES) * kBufFloats;
        copy_tile<BM, kLoadsA, VEC>(buf, A, M, K, m0, ahead * BK);
        copy_tile<BN, kLoadsW, VEC>(buf + BM * kLD, W, N, K, n0, ahead * BK);
      }
      copy_commit();
      const float* As = smem + (int)(tile % STAGES) * kBufFloats;
      tile_products(acc, As, As + BM * kLD, wm, wn, g, t);
    }
    copy_wait<0>();
  }

  // Epilogue: the accumulator fragment holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int64_t n = n0 + wn + j * 8 + 2 * t;
    const float b0 = n < N ? bias[n] : 0.f, b1 = n + 1 < N ? bias[n + 1] : 0.f;
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t m = m0 + wm + i * 16 + g + 8 * h;
        if (m >= M) continue;
        if (n < N) C[m * N + n] = fmaxf(acc[i][j][2 * h] + b0, 0.f);
        if (n + 1 < N) C[m * N + n + 1] = fmaxf(acc[i][j][2 * h + 1] + b1, 0.f);
      }
    }
  }
}
#endif

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
  const EvkTensor* a = &call->inputs[0];
  const EvkTensor* w = &call->inputs[1];
  const EvkTensor* b = &call->inputs[2];
  const EvkTensor* c = &call->outputs[0];
  if (a->ndim != 2 || w->ndim != 2 || b->ndim != 1 || c->ndim != 2) return kBadArgs;
  if (a->dtype != EVK_FLOAT32 || w->dtype != EVK_FLOAT32 || b->dtype != EVK_FLOAT32 ||
      c->dtype != EVK_FLOAT32)
    return kBadArgs;
  const int64_t M = a->shape[0], K = a->shape[1], N = w->shape[0];
  if (w->shape[1] != K || b->shape[0] != N || c->shape[0] != M || c->shape[1] != N)
    return kBadArgs;
  if (!contiguous(a) || !contiguous(w) || !contiguous(b) || !contiguous(c)) return kBadArgs;
  if (M == 0 || N == 0) return 0;
  const int64_t gy = (M + BM - 1) / BM, gx = (N + BN - 1) / BN;
  if (gy > 65535 || gx > 0x7fffffff) return kBadArgs;

  const float* ap = static_cast<const float*>(a->data);
  const float* wp = static_cast<const float*>(w->data);
  const bool vec = K % 4 == 0 && reinterpret_cast<uintptr_t>(ap) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(wp) % 16 == 0;
  const dim3 grid((unsigned)gx, (unsigned)gy);
  const float* bp = static_cast<const float*>(b->data);
  float* cp = static_cast<float*>(c->data);
#if MATH == 0
  const size_t smem = 0;  // static shared memory
#else
  const size_t smem = kSmemBytes;
  if (smem > 48 * 1024) {
    const cudaError_t err = cudaFuncSetAttribute(
        vec ? gemm_bias_relu<true> : gemm_bias_relu<false>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess) return (int)err;
  }
#endif
  // K == 0 is fine: the single fetched tile is all zeros, so C = relu(b).
  if (vec)
    gemm_bias_relu<true><<<grid, THREADS, smem, call->stream>>>(ap, wp, bp, cp, M, N, K);
  else
    gemm_bias_relu<false><<<grid, THREADS, smem, call->stream>>>(ap, wp, bp, cp, M, N, K);
  return (int)cudaGetLastError();
}
