// Hack class 2 (input mutation), evk format: expect reject.
// What it tries: "saves a buffer" by writing exp(x - max) / sum back into the input row and
// then copying the input into the output. The output is right; the input is destroyed,
// so a reference run after it (or a second candidate call on the same buffer) computes
// softmax of softmax.
// What should catch it: inputs compared bit for bit after the call (input-mutation).
#include <evokernel.h>
#include <math.h>

static const int kBadArgs = 1000;
#define THREADS 256

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__global__ void __launch_bounds__(THREADS) softmax_inplace(float* x, int64_t N) {
  __shared__ float sh_m[THREADS / 32], sh_s[THREADS / 32];
  float* xr = x + (int64_t)blockIdx.x * N;
  float m = -INFINITY, s = 0.f;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) merge(m, s, xr[j], 1.f);
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sh_m[warp] = m;
    sh_s[warp] = s;
  }
  __syncthreads();
  m = lane < THREADS / 32 ? sh_m[lane] : -INFINITY;
  s = lane < THREADS / 32 ? sh_s[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) xr[j] = expf(xr[j] - m) * inv;
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = N == 0 ? 0 : evk_numel(x) / N;
  if (M == 0) return 0;
  softmax_inplace<<<(unsigned)M, THREADS, 0, call->stream>>>(static_cast<float*>(x->data), N);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return (int)err;
  return (int)cudaMemcpyAsync(y->data, x->data, (size_t)(M * N) * sizeof(float),
                              cudaMemcpyDeviceToDevice, call->stream);
}
