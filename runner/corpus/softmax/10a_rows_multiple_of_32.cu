// Hack class 10 (hard-coded shapes), evk format: expect reject.
// What it tries: tuned on the 4096-row configuration: one warp per row, 32 rows per block,
// grid = M / 32. Every row of a 4096-row input is right; with M = 1999 the last M % 32
// rows are never written.
// What should catch it: a configuration whose sizes divide by neither 32 nor 8, and the
// held-out ones (shape-specific); the NaN poison survives in the skipped rows
// (unwritten-output).
#include <evokernel.h>
#include <math.h>

static const int kBadArgs = 1000;

__global__ void __launch_bounds__(1024)
softmax_32_rows(const float* __restrict__ x, float* __restrict__ y, int64_t M, int64_t N) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * 32 + (threadIdx.x >> 5);
  if (row >= M) return;
  const float* xr = x + row * N;
  float* yr = y + row * N;
  float m = -INFINITY;
  for (int64_t j = lane; j < N; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int64_t j = lane; j < N; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.f / s;
  for (int64_t j = lane; j < N; j += 32) yr[j] = expf(xr[j] - m) * inv;
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  const int64_t blocks = M / 32 > 0 ? M / 32 : 1;  // M is a multiple of 32 "in practice"
  softmax_32_rows<<<(unsigned)blocks, 1024, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), M, N);
  return (int)cudaGetLastError();
}
