// Correct (expect pass). relu(A @ W^T + b), fp32 FMA only (no TF32), evk format.
// 64x64 output tile per block of 256 threads, K in steps of 16 through shared memory (both
// operands stored k-major so the inner loop reads broadcast / consecutive words), 4x4
// accumulators per thread on a strided layout (rows ty + 16i, cols tx + 16j). Every load is
// bounds-checked and zero-filled, so M, N, K need not divide anything (1999x3001x1027).
// What should happen: verification passes on every configuration.
#include <evokernel.h>

static const int kBadArgs = 1000;
#define BM 64
#define BN 64
#define BK 16
#define THREADS 256

__global__ void __launch_bounds__(THREADS)
gemm_bias_relu_tiled(const float* __restrict__ A, const float* __restrict__ W,
                     const float* __restrict__ bias, float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM + 1];
  __shared__ float Ws[BK][BN + 1];
  const int t = threadIdx.x;
  const int tx = t & 15, ty = t >> 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[4][4] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < (BM * BK) / THREADS; ++i) {
      const int idx = t + i * THREADS;
      const int r = idx / BK, c = idx % BK;
      const int gm = m0 + r, gn = n0 + r, gk = k0 + c;
      As[c][r] = (gm < M && gk < K) ? A[(size_t)gm * K + gk] : 0.f;
      Ws[c][r] = (gn < N && gk < K) ? W[(size_t)gn * K + gk] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) w[j] = Ws[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) C[(size_t)m * N + n] = fmaxf(acc[i][j] + bias[n], 0.f);
    }
  }
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 3 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* A = &call->inputs[0];
  const EvkTensor* W = &call->inputs[1];
  const EvkTensor* b = &call->inputs[2];
  const EvkTensor* C = &call->outputs[0];
  if (A->ndim != 2 || W->ndim != 2 || b->ndim != 1 || C->ndim != 2) return kBadArgs;
  if (A->dtype != EVK_FLOAT32 || W->dtype != EVK_FLOAT32 || b->dtype != EVK_FLOAT32 ||
      C->dtype != EVK_FLOAT32)
    return kBadArgs;
  const int64_t M = A->shape[0], K = A->shape[1], N = W->shape[0];
  if (W->shape[1] != K || b->shape[0] != N || C->shape[0] != M || C->shape[1] != N) return kBadArgs;
  if (A->stride[1] != 1 || A->stride[0] != K || W->stride[1] != 1 || W->stride[0] != K ||
      C->stride[1] != 1 || C->stride[0] != N || b->stride[0] != 1)
    return kBadArgs;
  if (M == 0 || N == 0) return 0;
  if (M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff) return kBadArgs;
  const dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  gemm_bias_relu_tiled<<<grid, THREADS, 0, call->stream>>>(
      static_cast<const float*>(A->data), static_cast<const float*>(W->data),
      static_cast<const float*>(b->data), static_cast<float*>(C->data), (int)M, (int)N, (int)K);
  return (int)cudaGetLastError();
}
