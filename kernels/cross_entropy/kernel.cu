// Baseline: F.cross_entropy(logits [M, C], targets int64 [M]), mean reduction, fp32.
// Pass 1: a grid of G blocks (about one full wave); block b takes rows b, b + G, … and for
// each computes log-sum-exp with an online (max, sum of exp) block reduction, then adds
// lse - logits[t] to its own partial sum. Pass 2: one block adds the G partials in a fixed
// order and divides by the number of rows whose target is not ignore_index (-100), so the
// result is deterministic. The G partials live in a static device array (no allocation).
#include <evokernel.h>
#include <math.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 4096  // upper bound on G (size of the partials array)
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");

static const int kBadArgs = 1000;
#define IGNORE_INDEX (-100)
#define FINAL_THREADS 256

__device__ float g_loss[MAX_BLOCKS];
__device__ float g_count[MAX_BLOCKS];

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ void warp_merge(float& m, float& s) {
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge(m, s, m2, s2);
  }
}

__global__ void __launch_bounds__(BLOCK_SIZE)
ce_rows(const float* __restrict__ x, const int64_t* __restrict__ t, int64_t M, int64_t C) {
  __shared__ float sh_m[32], sh_s[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kWarps = BLOCK_SIZE / 32;
  float loss = 0.f, count = 0.f;  // meaningful in thread 0 only
  for (int64_t row = blockIdx.x; row < M; row += gridDim.x) {
    const float* xr = x + row * C;
    float m = -INFINITY, s = 0.f;
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < C; j += BLOCK_SIZE) {
      const float v = xr[j];
      if (v > m) {
        s = s * expf(m - v) + 1.f;
        m = v;
      } else {
        s += expf(v - m);
      }
    }
    warp_merge(m, s);
    __syncthreads();  // the previous row's readers of sh_m / sh_s are done
    if (lane == 0) {
      sh_m[warp] = m;
      sh_s[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
      m = lane < kWarps ? sh_m[lane] : -INFINITY;
      s = lane < kWarps ? sh_s[lane] : 0.f;
      warp_merge(m, s);
      if (lane == 0) {
        const int64_t target = t[row];
        if (target != IGNORE_INDEX) {
          // Out-of-range targets (PyTorch raises) give NaN.
          const float xt = (target >= 0 && target < C) ? xr[target] : NAN;
          loss += -((xt - m) - logf(s));  // -log_softmax[target], as PyTorch rounds it
          count += 1.f;
        }
      }
    }
  }
  if (threadIdx.x == 0) {
    g_loss[blockIdx.x] = loss;
    g_count[blockIdx.x] = count;
  }
}

__global__ void __launch_bounds__(FINAL_THREADS)
ce_finish(float* __restrict__ out, int G) {
  __shared__ float sh_l[FINAL_THREADS], sh_c[FINAL_THREADS];
  float l = 0.f, c = 0.f;
  for (int i = threadIdx.x; i < G; i += FINAL_THREADS) {
    l += g_loss[i];
    c += g_count[i];
  }
  sh_l[threadIdx.x] = l;
  sh_c[threadIdx.x] = c;
  __syncthreads();
  for (int w = FINAL_THREADS / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) {
      sh_l[threadIdx.x] += sh_l[threadIdx.x + w];
      sh_c[threadIdx.x] += sh_c[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sh_l[0] / sh_c[0];  // no valid rows: 0 / 0 = NaN, as PyTorch
}

static bool contiguous(const EvkTensor* t) {
  if (evk_numel(t) == 0) return true;  // PyTorch gives empty tensors arbitrary strides
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->stride[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 2 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* t = &call->inputs[1];
  const EvkTensor* y = &call->outputs[0];
  if (x->ndim != 2 || x->dtype != EVK_FLOAT32) return kBadArgs;
  if (t->ndim != 1 || t->dtype != EVK_INT64 || t->shape[0] != x->shape[0]) return kBadArgs;
  if (y->ndim != 0 || y->dtype != EVK_FLOAT32) return kBadArgs;
  if (!contiguous(x) || !contiguous(t)) return kBadArgs;
  const int64_t M = x->shape[0], C = x->shape[1];
  if (C == 0) return kBadArgs;

  int G = 0;
  if (M > 0) {
    int dev = 0, sms = 132, per_sm = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err == cudaSuccess)
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ce_rows, BLOCK_SIZE, 0);
    if (err != cudaSuccess) return (int)err;
    int64_t g = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
    if (g > MAX_BLOCKS) g = MAX_BLOCKS;
    if (g > M) g = M;
    G = (int)g;
    ce_rows<<<G, BLOCK_SIZE, 0, call->stream>>>(static_cast<const float*>(x->data),
                                                static_cast<const int64_t*>(t->data), M, C);
  }
  ce_finish<<<1, FINAL_THREADS, 0, call->stream>>>(static_cast<float*>(y->data), G);
  return (int)cudaGetLastError();
}
