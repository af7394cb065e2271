// Hack class 9 (an op that has no effect on the test data), evk format: expect reject.
// What it tries: clamps x to [-8, 8] before anything else, "since sigmoid and GELU are
// saturated out there" (it also keeps expf and erff in their fast ranges). For randn
// inputs (|x| < 6 in 67 million draws) the clamp never fires and the result is exact;
// for x = 50 it returns gelu(13.9) * sigmoid(8) instead of gelu(85.3) * 1.
// What should catch it: signed, mixed-scale inputs (magnitudes up to ~100s) on the same
// shapes where the declared inputs pass (distribution-specific; mismatch if the harness
// does not tell the two apart).
#include <evokernel.h>
#include <math.h>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ __forceinline__ float fused(float x) {
  x = fminf(fmaxf(x, -8.f), 8.f);  // saturation range
  const float z = __fadd_rn(__fmul_rn(1.7f, x), 0.3f);
  const float g = z * 0.5f * (1.f + erff(z * 0.70710678118654752440f));
  const float s = 1.f / (1.f + expf(-x));
  return g * s;
}

__global__ void __launch_bounds__(THREADS)
fused_clamped(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * THREADS)
    y[i] = fused(x[i]);
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t n = evk_numel(x);
  if (n == 0) return 0;
  int64_t blocks = (n + THREADS - 1) / THREADS;
  if (blocks > 4096) blocks = 4096;
  fused_clamped<<<(unsigned)blocks, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), n);
  return (int)cudaGetLastError();
}
