// Baseline: backward of y = x * rsqrt(mean(x^2, -1) + 1e-6) * w, fp32.
// Inputs (grad_y, x, w); outputs (grad_x, grad_w). With r = rsqrt(mean(x^2) + eps) per row:
//   grad_x[i, j] = r * g[i, j] * w[j] - r^3 / N * x[i, j] * sum_k g[i, k] * w[k] * x[i, k]
//   grad_w[j]    = sum_i g[i, j] * x[i, j] * r_i
// Pass 1: a grid of G blocks (about one full wave); block b owns a contiguous chunk of rows.
// Per row it reduces sum(x^2) and sum(g*w*x) over the block (warp shuffles, then shared
// memory), writes the grad_x row, and adds g*x*r into its own partial grad_w row. That
// partial row is kept in shared memory when N is small enough, else in the workspace
// itself; each column belongs to one thread, so no atomics are needed. At the end the block
// writes its partial row to workspace row b.
// Pass 2: grad_w[j] = sum over b of workspace[b, j] in a fixed order (deterministic).
// The workspace is a static device array (G is capped so that G * N fits). Rows longer than
// the whole array get G = 1, and that one block accumulates straight into grad_w.
#include <evokernel.h>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef SMEM_MAX_COLS
#define SMEM_MAX_COLS 12288  // partial grad_w row in shared memory up to this N (48 KB)
#endif
#ifndef WS_FLOATS
#define WS_FLOATS (1 << 23)  // static workspace: 8M floats, 32 MB
#endif
static_assert(BLOCK_SIZE % 32 == 0 && BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");
static_assert(SMEM_MAX_COLS * 4 <= 48 * 1024, "SMEM_MAX_COLS must fit in 48 KB");

static const int kBadArgs = 1000;
#define RMS_EPS 1e-6f
#define COL_THREADS_X 32
#define COL_THREADS_Y 8

__device__ float g_workspace[WS_FLOATS];

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// SMEM: accumulate the partial grad_w row in shared memory (N <= SMEM_MAX_COLS).
template <bool SMEM>
__global__ void __launch_bounds__(BLOCK_SIZE)
rms_bwd_rows(const float* __restrict__ g, const float* __restrict__ x,
             const float* __restrict__ w, float* __restrict__ gx, float* __restrict__ ws,
             int64_t M, int64_t N) {
  extern __shared__ float sh_acc[];
  __shared__ float sh_ss[32], sh_dot[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kWarps = BLOCK_SIZE / 32;

  float* acc = SMEM ? sh_acc : ws + (int64_t)blockIdx.x * N;
  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) acc[j] = 0.f;  // own columns only

  const int64_t r0 = (int64_t)blockIdx.x * M / gridDim.x;
  const int64_t r1 = ((int64_t)blockIdx.x + 1) * M / gridDim.x;
  for (int64_t row = r0; row < r1; ++row) {
    const float* gr = g + row * N;
    const float* xr = x + row * N;
    float* gxr = gx + row * N;

    float ss = 0.f, dot = 0.f;
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) {
      const float xv = xr[j];
      ss += xv * xv;
      dot += gr[j] * w[j] * xv;
    }
    ss = warp_sum(ss);
    dot = warp_sum(dot);
    __syncthreads();  // the previous row's readers of sh_ss / sh_dot are done
    if (lane == 0) {
      sh_ss[warp] = ss;
      sh_dot[warp] = dot;
    }
    __syncthreads();
    // Every warp reduces the partials itself, in the same order: identical totals.
    ss = warp_sum(lane < kWarps ? sh_ss[lane] : 0.f);
    dot = warp_sum(lane < kWarps ? sh_dot[lane] : 0.f);

    const float r = rsqrtf(ss / (float)N + RMS_EPS);
    const float c = r * r * r * dot / (float)N;
    #pragma unroll 4
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) {
      const float gv = gr[j], xv = xr[j];
      gxr[j] = r * gv * w[j] - c * xv;
      acc[j] += gv * xv * r;
    }
  }
  if (SMEM)
    for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE)
      ws[(int64_t)blockIdx.x * N + j] = acc[j];
}

// grad_w[j] = sum_{b < G} ws[b, j]: 32 columns per block, 8 threads down each column.
__global__ void __launch_bounds__(COL_THREADS_X * COL_THREADS_Y)
rms_bwd_colsum(const float* __restrict__ ws, float* __restrict__ gw, int G, int64_t N) {
  __shared__ float sh[COL_THREADS_Y][COL_THREADS_X + 1];
  const int64_t j = (int64_t)blockIdx.x * COL_THREADS_X + threadIdx.x;
  float s = 0.f;
  if (j < N)
    for (int b = threadIdx.y; b < G; b += COL_THREADS_Y) s += ws[(int64_t)b * N + j];
  sh[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < N) {
    float t = 0.f;
#pragma unroll
    for (int y = 0; y < COL_THREADS_Y; ++y) t += sh[y][threadIdx.x];
    gw[j] = t;
  }
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

static bool same_shape(const EvkTensor* a, const EvkTensor* b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; ++i)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

extern "C" int evk_backward(const EvkCall* call) {
  if (call->n_inputs != 3 || call->n_outputs != 2) return kBadArgs;
  const EvkTensor* g = &call->inputs[0];
  const EvkTensor* x = &call->inputs[1];
  const EvkTensor* w = &call->inputs[2];
  const EvkTensor* gx = &call->outputs[0];
  const EvkTensor* gw = &call->outputs[1];
  if (x->ndim < 1) return kBadArgs;
  for (const EvkTensor* t : {g, x, w, static_cast<const EvkTensor*>(gx),
                             static_cast<const EvkTensor*>(gw)})
    if (t->dtype != EVK_FLOAT32 || !contiguous(t)) return kBadArgs;
  const int64_t N = x->shape[x->ndim - 1];
  if (!same_shape(g, x) || !same_shape(gx, x) || !same_shape(gw, w)) return kBadArgs;
  if (w->ndim != 1 || w->shape[0] != N) return kBadArgs;
  if (N == 0) return 0;
  const int64_t M = evk_numel(x) / N;

  int dev = 0, sms = 132, per_sm = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (err != cudaSuccess) return (int)err;

  const bool smem = N <= SMEM_MAX_COLS;
  const size_t smem_bytes = smem ? (size_t)N * sizeof(float) : 0;
  err = smem ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rms_bwd_rows<true>,
                                                             BLOCK_SIZE, smem_bytes)
             : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rms_bwd_rows<false>,
                                                             BLOCK_SIZE, 0);
  if (err != cudaSuccess) return (int)err;
  int64_t G = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
  if (G > M) G = M;

  const float* gp = static_cast<const float*>(g->data);
  const float* xp = static_cast<const float*>(x->data);
  const float* wp = static_cast<const float*>(w->data);
  float* gxp = static_cast<float*>(gx->data);
  float* gwp = static_cast<float*>(gw->data);

  if (N > WS_FLOATS) {
    // One row is longer than the static workspace: a single block owns every row, so its
    // partial row is grad_w itself and no second pass is needed. Slow, but such rows are
    // far outside any configuration.
    if (M == 0) return (int)cudaMemsetAsync(gwp, 0, (size_t)N * sizeof(float), call->stream);
    rms_bwd_rows<false><<<1, BLOCK_SIZE, 0, call->stream>>>(gp, xp, wp, gxp, gwp, M, N);
    return (int)cudaGetLastError();
  }

  float* ws = nullptr;
  err = cudaGetSymbolAddress(reinterpret_cast<void**>(&ws), g_workspace);
  if (err != cudaSuccess) return (int)err;
  if (G > WS_FLOATS / N) G = WS_FLOATS / N;
  if (G > 0) {
    if (smem)
      rms_bwd_rows<true><<<(unsigned)G, BLOCK_SIZE, smem_bytes, call->stream>>>(gp, xp, wp, gxp,
                                                                               ws, M, N);
    else
      rms_bwd_rows<false><<<(unsigned)G, BLOCK_SIZE, 0, call->stream>>>(gp, xp, wp, gxp, ws, M,
                                                                       N);
  }
  // With no rows (G == 0) this writes grad_w = 0.
  const int64_t col_blocks = (N + COL_THREADS_X - 1) / COL_THREADS_X;
  rms_bwd_colsum<<<(unsigned)col_blocks, dim3(COL_THREADS_X, COL_THREADS_Y), 0, call->stream>>>(
      ws, gwp, (int)G, N);
  return (int)cudaGetLastError();
}
