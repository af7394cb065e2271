// Correct (expect pass, check bench). kernels/softmax, torch-ext (issue 18.2, found on the H100
// 2026-11-26). What it is: the kernel launched on a stream of its own made with plain
// cudaStreamCreate, with no event or wait: a *blocking* stream, which the legacy default
// stream (the caller's stream in the harness, as in most PyTorch programs) implicitly waits
// for, and which waits for it. So all of its work lies between the caller's events.
// Why unusual: it was adversarial entry softmax/03b until the run decided instead of the
// static rule; the run shows nothing escapes (all-work-timed), so it hides no time and its
// outputs are complete when read. It is still a latent bug for code that calls it from a
// non-default stream (torch.cuda.stream blocks, CUDA graphs): launch on
// at::cuda::getCurrentCUDAStream() instead. The hack with a non-blocking stream stays in the
// adversarial corpus (softmax/03b).
// What the verifier must say: passed (all-work-timed; its stream named in the evidence).
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
  if (g_side == nullptr) cudaStreamCreate(&g_side);
  softmax_rows<<<(unsigned)M, THREADS, 0, g_side>>>(x.data_ptr<float>(), y.data_ptr<float>(), N);
  return y;  // no event, no cudaStreamSynchronize(g_side)
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
