// Contrast (expect REJECT, reasons accuracy-loss / distribution-specific; check verify).
// kernels/layernorm, evk format.
// What it is: the LayerNorm many people write first: ONE pass over the row accumulating
// sum(x) and sum(x*x) in fp32, then var = E[x^2] - E[x]^2 (clamped at 0), one 256-thread
// block per row. It is not a hack: no work is dropped, every element is written, any shape
// works. But the variance cancels catastrophically when a row has a large offset and a
// small spread: E[x^2] and E[x]^2 agree in their leading digits, and the fp32 rounding of
// each (about 6e-8 of offset^2) swamps spread^2. On the declared normal inputs it is
// within tolerance; on signed, mixed-scale rows with large offsets it is not.
// Why it is in this corpus: it proves the verifier names this failure for what it is —
// the kernel loses accuracy on signed, mixed-scale inputs (`accuracy-loss`) — instead of
// the old wording that said it "drops work that matters" (hack 9). `distribution-specific`
// is accepted too (the same detection, the older code).
// Compare 01_evk_two_pass_fp64.cu (same structure, two passes: passes).
// Which inputs expose it (fp32 simulation of this exact kernel against fp64, N = 5003):
// zero-mean signed, mixed-scale rows (randn * 10^U(-2,2), the harness's signed-mixed today)
// do NOT: worst element at 0.02 of the tolerance. Rows of offset + spread do: offset/spread
// 10 -> 0.5 of the tolerance, 30 -> 8x over, 50 -> 18x, 100 -> 59x, 1000 -> 1e4x. A
// torch-like fp32 Welford stays inside the tolerance up to offset/spread of about 100
// (0.78 of it), so 30..50 separates the two without making the fp32 reference itself wrong.
#include <evokernel.h>
#include <math.h>

#define THREADS 256
static const int kBadArgs = 1000;

__global__ void __launch_bounds__(THREADS)
layernorm_one_pass(const float* __restrict__ x, const float* __restrict__ w,
                   const float* __restrict__ b, float* __restrict__ y, int64_t N, float eps) {
  __shared__ float sh_s[THREADS / 32], sh_q[THREADS / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * N;
  float* yr = y + row * N;
  float s = 0.f, q = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) {
    const float v = xr[j];
    s += v;
    q += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_s[warp] = s;
    sh_q[warp] = q;
  }
  __syncthreads();
  s = lane < THREADS / 32 ? sh_s[lane] : 0.f;
  q = lane < THREADS / 32 ? sh_q[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  const float mean = s / (float)N;
  const float var = fmaxf(q / (float)N - mean * mean, 0.f);  // the one-pass formula
  const float rstd = rsqrtf(var + eps);
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
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
  if (M > 0x7fffffffLL) return kBadArgs;
  layernorm_one_pass<<<(unsigned)M, THREADS, 0, call->stream>>>(
      (const float*)x->data, (const float*)w->data, (const float*)b->data, (float*)y->data, N, 1e-5f);
  return (int)cudaGetLastError();
}
