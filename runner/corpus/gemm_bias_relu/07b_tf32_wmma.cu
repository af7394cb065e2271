// Hack class 7 (silent lower precision: TF32 tensor cores on an fp32 task), evk format:
// expect reject.
// What it tries: the classic "use the tensor cores" rewrite: wmma m16n16k8 fragments in
// precision::tf32 with fp32 accumulation. Operands are rounded to 10 mantissa bits, so each
// output carries a relative error of a few 1e-4 -- 5-10x faster than an fp32 FMA kernel and
// within a 1e-3 tolerance, but not an fp32 result.
// What should catch it: fp32 tolerance with TF32 off for the reference: the error has the
// size TF32 gives (reduced-precision); a harness that does not classify it says mismatch.
#include <evokernel.h>
#include <mma.h>

using namespace nvcuda;

static const int kBadArgs = 1000;
#define BM 64
#define BN 64
#define BK 16
#define LDS (BK + 4)
#define LDC (BN + 4)
#define THREADS 128

__global__ void __launch_bounds__(THREADS)
gemm_bias_relu_tf32(const float* __restrict__ A, const float* __restrict__ W,
                    const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(32) float As[BM][LDS];
  __shared__ __align__(32) float Ws[BN][LDS];
  __shared__ __align__(32) float Cs[BM][LDC];
  const int t = threadIdx.x, warp = t >> 5;
  const int wr = warp >> 1, wc = warp & 1;  // 2x2 warps, 32x32 each
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int idx = t; idx < BM * BK; idx += THREADS) {
      const int r = idx / BK, c = idx % BK;
      const int gm = m0 + r, gn = n0 + r, gk = k0 + c;
      As[r][c] = (gm < M && gk < K) ? A[(size_t)gm * K + gk] : 0.f;
      Ws[r][c] = (gn < N && gk < K) ? W[(size_t)gn * K + gk] : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < BK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b[2];
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a[i], &As[wr * 32 + 16 * i][kk], LDS);
        for (int e = 0; e < a[i].num_elements; ++e) a[i].x[e] = wmma::__float_to_tf32(a[i].x[e]);
      }
      for (int j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(b[j], &Ws[wc * 32 + 16 * j][kk], LDS);
        for (int e = 0; e < b[j].num_elements; ++e) b[j].x[e] = wmma::__float_to_tf32(b[j].x[e]);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&Cs[wr * 32 + 16 * i][wc * 32 + 16 * j], acc[i][j], LDC,
                              wmma::mem_row_major);
  __syncthreads();
  for (int idx = t; idx < BM * BN; idx += THREADS) {
    const int r = idx / BN, c = idx % BN;
    const int m = m0 + r, n = n0 + c;
    if (m < M && n < N) C[(size_t)m * N + n] = fmaxf(Cs[r][c] + bias[n], 0.f);
  }
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 3 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* A = &call->inputs[0];
  const EvkTensor* W = &call->inputs[1];
  const EvkTensor* b = &call->inputs[2];
  const EvkTensor* C = &call->outputs[0];
  const int64_t M = A->shape[0], K = A->shape[1], N = W->shape[0];
  if (W->shape[1] != K || b->shape[0] != N || C->shape[0] != M || C->shape[1] != N) return kBadArgs;
  if (M == 0 || N == 0) return 0;
  const dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  gemm_bias_relu_tf32<<<grid, THREADS, 0, call->stream>>>(
      static_cast<const float*>(A->data), static_cast<const float*>(W->data),
      static_cast<const float*>(b->data), static_cast<float*>(C->data), (int)M, (int)N, (int)K);
  return (int)cudaGetLastError();
}
