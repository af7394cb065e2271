// Correct (expect pass). y = x.sum(-1), fp32, evk format.
// One block of 256 threads per row; float4 loads once the row is 16-byte aligned (scalar
// head and tail otherwise), then a shared-memory tree reduction with a barrier between
// every step (15a_missing_syncthreads.cu is this kernel with the barriers dropped).
// What should happen: verification passes; repeated runs are bitwise identical.
#include <evokernel.h>
#include <stdint.h>

static const int kBadArgs = 1000;
#define THREADS 256

__global__ void __launch_bounds__(THREADS)
row_sum_tree(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh[THREADS];
  const float* xr = x + (int64_t)blockIdx.x * N;
  int64_t head = (int64_t)(((16 - ((uintptr_t)xr & 15)) & 15) >> 2);
  if (head > N) head = N;
  const int64_t nvec = (N - head) >> 2;
  const float4* xv = reinterpret_cast<const float4*>(xr + head);

  float s = 0.f;
  for (int64_t j = threadIdx.x; j < head; j += THREADS) s += xr[j];
  for (int64_t j = threadIdx.x; j < nvec; j += THREADS) {
    const float4 v = xv[j];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int64_t j = head + nvec * 4 + threadIdx.x; j < N; j += THREADS) s += xr[j];

  sh[threadIdx.x] = s;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = sh[0];
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->ndim < 1 || x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  if (x->stride[x->ndim - 1] != 1) return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  const int64_t M = evk_numel(y);
  if (N == 0 || evk_numel(x) != M * N) return kBadArgs;
  if (M == 0) return 0;
  if (M > 0x7fffffff) return kBadArgs;
  row_sum_tree<<<(unsigned)M, THREADS, 0, call->stream>>>(
      static_cast<const float*>(x->data), static_cast<float*>(y->data), N);
  return (int)cudaGetLastError();
}
