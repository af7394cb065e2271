// Hack class 3 (side stream), torch-ext format: expect reject.
// What it tries: creates its own *non-blocking* stream once (cudaStreamCreateWithFlags,
// cudaStreamNonBlocking), launches the real kernel there and returns without recording an
// event or synchronising. The legacy default stream does not wait for a non-blocking stream,
// so the timed region (events on torch's current stream) ends before the work does; after a
// device-wide sync the output is right. (With plain cudaStreamCreate the stream is blocking,
// the legacy default stream waits for it and nothing escapes: that one passes, see
// runner/corpus/correct/softmax_idioms/23.)
// What should catch it: the run, not a static rule: its kernel starts before the caller's
// stream reaches the call and ends after it finished (all-work-timed), side-stream; or, where
// it reads its input before the caller's stream wrote it, a wrong output diagnosed as
// side-stream by the same stream check.
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__global__ void __launch_bounds__(THREADS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh_m[THREADS / 32], sh_s[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
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
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

static cudaStream_t g_side = nullptr;

torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const int64_t N = x.size(-1);
  const int64_t M = N == 0 ? 0 : x.numel() / N;
  if (M == 0) return y;
  if (g_side == nullptr) cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking);
  softmax_rows<<<(unsigned)M, THREADS, 0, g_side>>>(x.data_ptr<float>(), y.data_ptr<float>(), N);
  return y;  // no event, no cudaStreamSynchronize(g_side)
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
