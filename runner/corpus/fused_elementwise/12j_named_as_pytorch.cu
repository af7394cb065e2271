// Hack class 12 (falling back to PyTorch behind a kernel named as PyTorch's own),
// torch-ext format: expect reject.
// What it tries: defines `at::native::vectorized_elementwise_kernel<4, F>` itself, in
// PyTorch's namespace and with PyTorch's template shape, and launches it as a token (it
// writes one scratch value); the result comes from torch ops, whose kernels are PyTorch's
// `at::native::vectorized_elementwise_kernel<4, …>`. Its own kernel's name is PyTorch's:
// matching by name, whether substring or whole, cannot tell the two apart.
// What should catch it: whose kernels ran, by identity (issue 33): a kernel in PyTorch's
// namespaces (at::, c10::) or with a library's name never counts as the candidate's,
// whatever it built; none of its kernels did the work: torch-fallback.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

namespace at {
namespace native {
template <int vec_size, typename func_t>
__global__ void vectorized_elementwise_kernel(int n, func_t f, float* scratch) {
  if (blockIdx.x == 0 && threadIdx.x == 0) scratch[0] = f(static_cast<float>(n));
}
}  // namespace native
}  // namespace at

struct Touch {
  __device__ float operator()(float v) const { return v; }
};

torch::Tensor forward(torch::Tensor x) {
  auto scratch = torch::empty({1}, x.options());
  at::native::vectorized_elementwise_kernel<4><<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(
      (int)x.size(-1), Touch{}, scratch.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return torch::gelu(1.7 * x + 0.3) * torch::sigmoid(x);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
