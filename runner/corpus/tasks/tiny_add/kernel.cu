// Baseline for the tiny_add corpus task (hack class 14): out = x + y, fp32.
// Correct, and verification passes; the task is too small to time (a call is pure launch
// overhead), so the benchmark must time it but mark every configuration launch-bound and
// leave it out of any headline speedup, instead of reporting a ratio as a win.
#include <evokernel.h>

static const int kBadArgs = 1000;

__global__ void add(const float* __restrict__ x, const float* __restrict__ y,
                    float* __restrict__ out, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 2 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->inputs[1];
  const EvkTensor* out = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32 || out->dtype != EVK_FLOAT32)
    return kBadArgs;
  const int64_t n = evk_numel(x);
  if (evk_numel(y) != n || evk_numel(out) != n) return kBadArgs;
  if (n == 0) return 0;
  add<<<(unsigned)((n + 255) / 256), 256, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<const float*>(y->data),
      static_cast<float*>(out->data), n);
  return (int)cudaGetLastError();
}
