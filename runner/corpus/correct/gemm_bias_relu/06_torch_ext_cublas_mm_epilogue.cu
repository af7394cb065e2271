// Correct (expect pass, check bench). kernels/gemm_bias_relu (relu(A @ W^T + b), fp32,
// TF32 off), torch-ext format exporting `forward(A, W, b)`.
// What it is: the product through cuBLAS (at::mm, fp32 — at::mm honours the harness's
// allow_tf32 = False, so no tensor-core TF32), then ONE own kernel for the epilogue:
// y = relu(C + b[n]), applied in place on the GEMM's result (memory this call allocated),
// one thread per element, grid-stride, int64 indices, NaN propagated as torch.relu does.
// Why unusual: the kernel's own code is only the epilogue; the expensive part is a vendor
// library call. That is how production code fuses a bias and activation when no custom
// GEMM is worth writing. The verifier must accept it: the library call is a warning
// (library-call), its own kernel bias_relu_epilogue runs, and precision is full fp32.
// What the verifier must say: passed on every configuration (odd 1999x3001x1027 included),
// then benchmarked (against eager, which launches the same GEMM: expect about 1.0x).
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
bias_relu_epilogue(float* __restrict__ c, const float* __restrict__ b, int64_t total, int64_t N) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < total; i += stride) {
    const float v = c[i] + b[i % N];
    c[i] = (v > 0.f || isnan(v)) ? v : 0.f;
  }
}

torch::Tensor forward(torch::Tensor A, torch::Tensor W, torch::Tensor b) {
  TORCH_CHECK(A.is_cuda() && W.is_cuda() && b.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(A.scalar_type() == torch::kFloat32 && W.scalar_type() == torch::kFloat32 &&
              b.scalar_type() == torch::kFloat32, "float32 tensors expected");
  TORCH_CHECK(A.dim() == 2 && W.dim() == 2 && b.dim() == 1, "A [M, K], W [N, K], b [N] expected");
  TORCH_CHECK(A.size(1) == W.size(1) && b.size(0) == W.size(0), "shape mismatch");
  auto bc = b.contiguous();
  auto C = at::mm(A, W.t()).contiguous();  // [M, N], fp32 cuBLAS
  const int64_t N = W.size(0);
  const int64_t total = C.numel();
  if (total == 0) return C;
  int64_t blocks = (total + THREADS - 1) / THREADS;
  if (blocks > 65536) blocks = 65536;  // grid-stride covers the rest
  bias_relu_epilogue<<<(unsigned)blocks, THREADS>>>(C.data_ptr<float>(), bc.data_ptr<float>(), total, N);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "bias_relu_epilogue launch failed: ", cudaGetErrorString(err));
  return C;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "relu(A @ W^T + b): cuBLAS GEMM + own bias/ReLU epilogue");
}
