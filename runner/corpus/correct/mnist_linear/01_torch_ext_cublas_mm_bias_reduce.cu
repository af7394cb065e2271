// Correct (expect pass, check bench). robust-kbench mnist_linear, BACKWARD
// (task "shared:robust-kbench/tasks/mnist_linear#backward"), torch-ext format exporting
// `backward(grad_output, x, weights) -> (grad_x, grad_weights, grad_biases)`, the signature
// and return order of the task's AutogradFunction.backward_fn.
// What it is: the backward of y = x @ W^T + b.
//   grad_x       = grad_output @ W          at::mm  (cuBLAS, fp32; TF32 stays off)
//   grad_weights = grad_output^T @ x        at::mm  (cuBLAS, fp32)
//   grad_biases  = sum over the batch of grad_output: this file's own kernel
//                  (one thread per output feature, fp64 accumulation over the rows,
//                  fixed order: deterministic, no atomics).
// Why unusual: the two GEMMs go through a vendor library (the same cuBLAS kernels the
// reference's autograd launches), and only the reduction is a kernel of its own. That is
// what engineers write for a linear backward, and it is allowed: the verifier must not call
// it a PyTorch fallback (library-call is a warning, not a rejection) nor "borrowed
// kernels", because its own kernel (bias_grad_colsum) runs and does real work.
// Shapes: batch 4 or 64, 128 or 4096 input features, 10 or 4096 outputs; any size works.
// What the verifier must say: passed (all three gradients), then benchmarked.
#include <torch/extension.h>
#include <cuda_runtime.h>

#define THREADS 256

// grad_b[o] = sum_r g[r, o]; threads of a block read consecutive o: coalesced.
__global__ void __launch_bounds__(THREADS)
bias_grad_colsum(const float* __restrict__ g, float* __restrict__ gb, int64_t rows, int64_t cols) {
  const int64_t o = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (o >= cols) return;
  double acc = 0.0;
  for (int64_t r = 0; r < rows; ++r) acc += (double)g[r * cols + o];
  gb[o] = (float)acc;
}

std::vector<torch::Tensor> backward(torch::Tensor grad_output, torch::Tensor x, torch::Tensor weights) {
  TORCH_CHECK(grad_output.is_cuda() && x.is_cuda() && weights.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(grad_output.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32 &&
                  weights.scalar_type() == torch::kFloat32, "float32 tensors expected");
  TORCH_CHECK(grad_output.dim() == 2 && x.dim() == 2 && weights.dim() == 2, "2-D tensors expected");
  const int64_t B = x.size(0), I = x.size(1), O = weights.size(0);
  TORCH_CHECK(weights.size(1) == I && grad_output.size(0) == B && grad_output.size(1) == O, "shape mismatch");
  auto g = grad_output.contiguous();
  auto xc = x.contiguous();
  auto wc = weights.contiguous();

  auto grad_x = at::mm(g, wc);          // [B, O] @ [O, I] -> [B, I]
  auto grad_w = at::mm(g.t(), xc);      // [O, B] @ [B, I] -> [O, I]
  auto grad_b = torch::empty({O}, g.options());
  if (O > 0) {
    const int64_t blocks = (O + THREADS - 1) / THREADS;
    bias_grad_colsum<<<(unsigned)blocks, THREADS>>>(g.data_ptr<float>(), grad_b.data_ptr<float>(), B, O);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_grad_colsum launch failed: ", cudaGetErrorString(err));
  }
  return {grad_x, grad_w, grad_b};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("backward", &backward, "mnist_linear backward: cuBLAS GEMMs + own bias-gradient reduction");
}
