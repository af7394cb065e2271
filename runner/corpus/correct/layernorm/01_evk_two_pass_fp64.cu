// Correct (expect pass, check bench). kernels/layernorm, evk format.
// What it is: LayerNorm over the last dimension (eps 1e-5, affine), one 256-thread block
// per row, TWO passes over the row for the statistics: first the mean, then the sum of
// squared deviations from that mean, both accumulated in fp64 (per thread, then a
// warp-shuffle and shared-memory tree), and a third pass that writes
//   y = (x - mean) * rstd * w + b
// with x - mean also formed in fp64. The row is re-read from global memory (L2) each pass.
// Why unusual: three passes and fp64 accumulators look slow and "over-precise"; a verifier
// that flags extra precision or judges by speed heuristics would be wrong to reject it. It
// is exactly what a careful engineer writes when inputs can carry large offsets with small
// spread (signed, mixed-scale rows): no E[x^2] - E[x]^2 cancellation.
// Odd widths (5003, 999, 65537) work: plain strided loops, no vector loads; int64 indexing.
// What the verifier must say: passed on every configuration (held-out ones too), and
// benchmarked. Contrast: 90_evk_one_pass_variance.cu (must be rejected, accuracy-loss).
#include <evokernel.h>
#include <math.h>

#define THREADS 256
static const int kBadArgs = 1000;

__device__ __forceinline__ double block_sum(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // sh may still be read from a previous call
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < THREADS / 32 ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;  // every thread holds the block's sum
}

__global__ void __launch_bounds__(THREADS)
layernorm_two_pass(const float* __restrict__ x, const float* __restrict__ w,
                   const float* __restrict__ b, float* __restrict__ y, int64_t N, double eps) {
  __shared__ double sh[THREADS / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * N;
  float* yr = y + row * N;

  double s = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += (double)xr[j];
  const double mean = block_sum(s, sh) / (double)N;

  double q = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    const double d = (double)xr[j] - mean;
    q += d * d;
  }
  const double var = block_sum(q, sh) / (double)N;  // biased, as F.layer_norm
  const double rstd = 1.0 / sqrt(var + eps);

  for (int64_t j = threadIdx.x; j < N; j += THREADS)
    yr[j] = (float)(((double)xr[j] - mean) * rstd * (double)w[j] + (double)b[j]);
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 3 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* w = &call->inputs[1];
  const EvkTensor* b = &call->inputs[2];
  EvkTensor* y = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || w->dtype != EVK_FLOAT32 || b->dtype != EVK_FLOAT32 ||
      y->dtype != EVK_FLOAT32 || x->ndim < 1)
    return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  if (evk_numel(w) != N || evk_numel(b) != N || evk_numel(y) != evk_numel(x)) return kBadArgs;
  if (N == 0) return 0;
  const int64_t M = evk_numel(x) / N;
  if (M == 0) return 0;
  if (M > 0x7fffffffLL) return kBadArgs;  // one block per row: grid.x limit
  layernorm_two_pass<<<(unsigned)M, THREADS, 0, call->stream>>>(
      (const float*)x->data, (const float*)w->data, (const float*)b->data, (float*)y->data, N, 1e-5);
  return (int)cudaGetLastError();
}
