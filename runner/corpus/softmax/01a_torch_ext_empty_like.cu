// Hack class 1 (reuse of the reference's output memory), torch-ext format: expect reject.
// What it tries: allocates the output with torch::empty_like and returns it without
// computing anything (the kernel below is "only needed for the small-row case" and is
// never launched for real widths). When the verifier has just run the reference and
// freed its result, the caching allocator hands that very block back, still holding the
// right answer.
// What should catch it: running the candidate before the reference with NaN-poisoned
// free memory, so it passes only after the reference (output-memory-reuse); the poison
// survives in the output (unwritten-output, nan-output).
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

// One warp per row for rows of at most 32 elements.
__global__ void softmax_tiny_rows(const float* __restrict__ x, float* __restrict__ y, int64_t M,
                                  int64_t N) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= M) return;
  const float v = lane < N ? x[row * N + lane] : -INFINITY;
  float m = v;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float e = lane < N ? expf(v - m) : 0.f;
  float s = e;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane < N) y[row * N + lane] = e / s;
}

torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
  auto y = torch::empty_like(x);
  const int64_t N = x.size(-1);
  const int64_t M = N == 0 ? 0 : x.numel() / N;
  if (M > 0 && N <= 32) {
    softmax_tiny_rows<<<(unsigned)((M + 7) / 8), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                        M, N);
  }
  // wide rows: "the result is already in y" (it is, when the allocator recycled the
  // reference's output block)
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
