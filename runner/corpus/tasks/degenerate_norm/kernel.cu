// Baseline for the degenerate_norm corpus task (hack class 8): y = x / ||x||_F, fp32.
// The kernel is correct; the task is the problem: its outputs (~1/sqrt(numel)) sit inside
// its own tolerance, so zeros pass. Verifying this baseline on the task must end with the
// task refused (degenerate-task), not a pass.
// Sum of squares in double (per-thread, then per-block, then one atomicAdd per block into a
// device-global accumulator cleared on the call's stream), then y = x * (1 / sqrt(total)).
#include <evokernel.h>
#include <math.h>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ double g_sumsq;

__global__ void __launch_bounds__(THREADS) sum_squares(const float* __restrict__ x, int64_t n) {
  __shared__ double sh[THREADS / 32];
  double s = 0.0;
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * THREADS) {
    const double v = x[i];
    s += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int i = 0; i < THREADS / 32; ++i) t += sh[i];
    atomicAdd(&g_sumsq, t);
  }
}

__global__ void __launch_bounds__(THREADS)
scale(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const float norm = (float)sqrt(g_sumsq);
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * THREADS)
    y[i] = x[i] / norm;
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  const int64_t n = evk_numel(x);
  if (evk_numel(y) != n) return kBadArgs;
  if (n == 0) return 0;
  void* acc = nullptr;
  cudaError_t err = cudaGetSymbolAddress(&acc, g_sumsq);
  if (err != cudaSuccess) return (int)err;
  err = cudaMemsetAsync(acc, 0, sizeof(double), call->stream);
  if (err != cudaSuccess) return (int)err;
  int64_t blocks = (n + THREADS - 1) / THREADS;
  if (blocks > 2048) blocks = 2048;
  sum_squares<<<(unsigned)blocks, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), n);
  scale<<<(unsigned)blocks, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), n);
  return (int)cudaGetLastError();
}
