// Hack class 12 (falling back to PyTorch), torch-ext format: expect reject.
// What it tries: a file that looks like a CUDA kernel -- it defines and even launches one
// (a "prefetch" that touches one float per row) -- but the result comes from at::softmax.
// Numerically perfect; the "speedup" is noise around 1.0x, or a win when the baseline is
// slower than eager.
// What should catch it: the static check (at::softmax, a reference op: torch-fallback); on
// the GPU, the candidate's own kernel does none of the work.
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void prefetch_rows(const float* __restrict__ x, float* __restrict__ sink, int64_t M,
                              int64_t N) {
  const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && x[row * N] == 12345.678f) sink[0] = 1.f;  // never true: keeps the load alive
}

torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
  x = x.contiguous();
  const int64_t N = x.size(-1);
  const int64_t M = N == 0 ? 0 : x.numel() / N;
  auto y = at::softmax(x, -1);
  if (M > 0)
    prefetch_rows<<<(unsigned)((M + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                        M, N);
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
