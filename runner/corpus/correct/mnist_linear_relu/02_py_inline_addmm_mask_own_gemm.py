# Correct (expect pass, check bench). robust-kbench mnist_linear_relu, BACKWARD
# (task "shared:robust-kbench/tasks/mnist_linear_relu#backward"), .py candidate with
# torch.utils.cpp_extension.load_inline, exporting
# `backward(grad_output, x, weights, biases) -> (grad_x, grad_weights, grad_biases)`.
# What it is: the backward of relu(x @ W^T + b). The forward saved only x, W and b, so the
# ReLU mask must be recomputed:
#   pre = at::addmm(b, x, W^T)  -- the very cuBLAS call F.linear makes, so the mask
#                                  (pre > 0) is bit for bit the one the forward used;
#                                  recomputing it with another GEMM would flip the mask
#                                  where pre is within rounding of 0
#   relu_mask_bias_grad: own kernel, gm = grad_output * (pre > 0) and grad_b = column sums
#                        of gm (fp64, fixed order)
#   grad_x = gm @ W, grad_W = gm^T @ x: own tiled GEMM kernel (16x16 shared-memory tiles,
#                        fp64 accumulation, any strides, bounds-checked edges)
# Why unusual: a library call recomputes part of the FORWARD inside the backward, and the
# candidate's own kernels do the rest, including both gradient GEMMs. The verifier must
# accept the addmm (a recompute that the saved-tensor signature forces) and see its own
# kernels run.
# What the verifier must say: passed (all three gradients), then benchmarked.
import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define COL_THREADS 256
#define TILE 16

static void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, what, " launch failed: ", cudaGetErrorString(err));
}

// gm[r, o] = pre[r, o] > 0 ? g[r, o] : 0 ; gb[o] = sum_r gm[r, o]
__global__ void __launch_bounds__(COL_THREADS)
relu_mask_bias_grad(const float* __restrict__ g, const float* __restrict__ pre, float* __restrict__ gm,
                    float* __restrict__ gb, int64_t rows, int64_t cols) {
  const int64_t o = (int64_t)blockIdx.x * COL_THREADS + threadIdx.x;
  if (o >= cols) return;
  double acc = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r * cols + o;
    const float v = pre[i] > 0.f ? g[i] : 0.f;
    gm[i] = v;
    acc += (double)v;
  }
  gb[o] = (float)acc;
}

// C[m, n] = sum_k A(m, k) * B(k, n), A(m, k) = A[m*sam + k*sak], B(k, n) = B[k*sbk + n*sbn],
// C row-major [M, N]. fp64 accumulation; tiles padded with zeros at the edges.
__global__ void __launch_bounds__(TILE * TILE)
gemm_tiled_f64acc(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn) {
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m = (int64_t)blockIdx.y * TILE + ty;
  const int64_t n = (int64_t)blockIdx.x * TILE + tx;
  double acc = 0.0;
  for (int64_t k0 = 0; k0 < K; k0 += TILE) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (m < M && ka < K) ? A[m * sam + ka * sak] : 0.f;
    Bs[ty][tx] = (kb < K && n < N) ? B[kb * sbk + n * sbn] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += (double)As[ty][k] * (double)Bs[k][tx];
    __syncthreads();
  }
  if (m < M && n < N) C[m * N + n] = (float)acc;
}

static void gemm(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                 int64_t sam, int64_t sak, int64_t sbk, int64_t sbn) {
  if (M == 0 || N == 0) return;
  const int64_t gx = (N + TILE - 1) / TILE, gy = (M + TILE - 1) / TILE;
  TORCH_CHECK(gx <= 0x7fffffffLL && gy <= 65535, "GEMM too large for the grid");
  gemm_tiled_f64acc<<<dim3((unsigned)gx, (unsigned)gy), dim3(TILE, TILE)>>>(A, B, C, M, N, K, sam, sak, sbk, sbn);
  check_launch("gemm_tiled_f64acc");
}

std::vector<torch::Tensor> linear_relu_backward(torch::Tensor grad_output, torch::Tensor x,
                                                torch::Tensor weights, torch::Tensor biases) {
  TORCH_CHECK(grad_output.is_cuda() && x.is_cuda() && weights.is_cuda() && biases.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(grad_output.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32 &&
              weights.scalar_type() == torch::kFloat32 && biases.scalar_type() == torch::kFloat32,
              "float32 tensors expected");
  TORCH_CHECK(x.dim() == 2 && weights.dim() == 2 && biases.dim() == 1 && grad_output.dim() == 2, "shapes");
  const int64_t B = x.size(0), I = x.size(1), O = weights.size(0);
  TORCH_CHECK(weights.size(1) == I && biases.size(0) == O && grad_output.size(0) == B &&
              grad_output.size(1) == O, "shape mismatch");
  auto g = grad_output.contiguous();
  auto xc = x.contiguous();
  auto wc = weights.contiguous();

  // the forward's pre-activation, recomputed exactly as F.linear computes it
  auto pre = at::addmm(biases, xc, wc.t()).contiguous();
  auto gm = torch::empty({B, O}, g.options());
  auto grad_b = torch::empty({O}, g.options());
  auto grad_x = torch::empty({B, I}, g.options());
  auto grad_w = torch::empty({O, I}, g.options());
  if (O > 0) {
    const int64_t blocks = (O + COL_THREADS - 1) / COL_THREADS;
    relu_mask_bias_grad<<<(unsigned)blocks, COL_THREADS>>>(g.data_ptr<float>(), pre.data_ptr<float>(),
                                                           gm.data_ptr<float>(), grad_b.data_ptr<float>(), B, O);
    check_launch("relu_mask_bias_grad");
  }
  const float* gmp = gm.data_ptr<float>();
  // grad_x [B, I] = gm [B, O] @ W [O, I]
  gemm(gmp, wc.data_ptr<float>(), grad_x.data_ptr<float>(), B, I, O, /*sam*/ O, /*sak*/ 1, /*sbk*/ I, /*sbn*/ 1);
  // grad_w [O, I] = gm^T [O, B] @ x [B, I]
  gemm(gmp, xc.data_ptr<float>(), grad_w.data_ptr<float>(), O, I, B, /*sam*/ 1, /*sak*/ O, /*sbk*/ I, /*sbn*/ 1);
  return {grad_x, grad_w, grad_b};
}
"""

_CPP_SRC = (
    "std::vector<torch::Tensor> linear_relu_backward(torch::Tensor grad_output, torch::Tensor x, "
    "torch::Tensor weights, torch::Tensor biases);"
)

_ext = load_inline(
    name="evkc_mnist_linear_relu_bwd_02",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["linear_relu_backward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def backward(grad_output, x, weights, biases):
    grad_x, grad_w, grad_b = _ext.linear_relu_backward(grad_output, x, weights, biases)
    return grad_x, grad_w, grad_b
