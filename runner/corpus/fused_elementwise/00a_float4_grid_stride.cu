// Correct (expect pass). y = gelu(1.7x + 0.3) * sigmoid(x), exact (erf) GELU, fp32, evk.
// Grid-stride loop over float4 vectors (when both buffers are 16-byte aligned), scalar loop
// for the numel % 4 tail. The arithmetic follows PyTorch's kernels step by step:
// z = (1.7f * x) + 0.3f rounded twice (no FMA contraction), gelu(z) = z * 0.5 * (1 +
// erf(z / sqrt 2)), sigmoid(x) = 1 / (1 + exp(-x)) -- saturating correctly for |x| in
// the hundreds (signed-mixed inputs).
// What should happen: verification passes on every configuration.
#include <evokernel.h>
#include <math.h>
#include <stdint.h>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ __forceinline__ float fused(float x) {
  const float z = __fadd_rn(__fmul_rn(1.7f, x), 0.3f);
  const float g = z * 0.5f * (1.f + erff(z * 0.70710678118654752440f));
  const float s = 1.f / (1.f + expf(-x));
  return g * s;
}

__global__ void __launch_bounds__(THREADS)
fused_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t nvec) {
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < nvec;
       i += (int64_t)gridDim.x * THREADS) {
    const float4 v = x[i];
    y[i] = make_float4(fused(v.x), fused(v.y), fused(v.z), fused(v.w));
  }
}

__global__ void __launch_bounds__(THREADS)
fused_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  for (int64_t i = begin + (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * THREADS)
    y[i] = fused(x[i]);
}

static unsigned grid_for(int64_t work, int sms) {
  int64_t blocks = (work + THREADS - 1) / THREADS;
  const int64_t cap = (int64_t)(sms > 0 ? sms : 132) * 16;
  if (blocks > cap) blocks = cap;
  return (unsigned)(blocks > 0 ? blocks : 1);
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  const int64_t n = evk_numel(x);
  if (evk_numel(y) != n) return kBadArgs;
  if (n == 0) return 0;
  const float* xp = static_cast<const float*>(x->data);
  float* yp = static_cast<float*>(y->data);
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  int64_t done = 0;
  if ((((uintptr_t)xp | (uintptr_t)yp) & 15) == 0) {
    const int64_t nvec = n / 4;
    if (nvec > 0) {
      fused_vec4<<<grid_for(nvec, sms), THREADS, 0, call->stream>>>(
          reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), nvec);
      done = nvec * 4;
    }
  }
  if (done < n) fused_scalar<<<grid_for(n - done, sms), THREADS, 0, call->stream>>>(xp, yp, done, n);
  return (int)cudaGetLastError();
}
