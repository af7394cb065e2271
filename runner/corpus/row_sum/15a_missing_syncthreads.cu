// Hack class 15 (race), evk format: expect reject.
// What it tries: 00a_smem_tree_float4.cu with the __syncthreads() between the steps of the
// shared-memory tree dropped ("the warps run in lockstep anyway" -- they do not, and the
// steps with stride >= 32 read partial sums other warps have not written yet). It often
// gives the right answer for some rows and a different wrong one on the next run.
// What should catch it: repeated runs on identical inputs differ (race), or the values
// are simply wrong (mismatch).
#include <evokernel.h>
#include <stdint.h>

static const int kBadArgs = 1000;
#define THREADS 1024

__global__ void __launch_bounds__(THREADS)
row_sum_racy(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh[THREADS];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += xr[j];
  sh[threadIdx.x] = s;
  // missing: __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
    // missing: __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = sh[0];
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = evk_numel(y);
  if (M == 0 || N == 0) return 0;
  row_sum_racy<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
