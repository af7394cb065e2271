// Correct (expect pass, check bench). robust-kbench mnist_cross_entropy, BACKWARD
// (task "shared:robust-kbench/tasks/mnist_cross_entropy#backward"), torch-ext format
// exporting `backward(grad_output, predictions, targets) -> grad_predictions`.
// What it is: the gradient of F.cross_entropy(predictions, targets, reduction="mean"):
//   grad[b, c] = grad_output / n_valid * (softmax(predictions[b])[c] - (c == targets[b]))
// with rows whose target is the ignore index (-100) getting zero and not counted in
// n_valid, as PyTorch does. Two own kernels:
//   count_valid_targets  one block: how many targets are not ignored (int64 targets)
//   ce_backward_rows     one warp per row: max, sum of exp, then the gradient row
// grad_output is a 0-dim tensor; it is read on the device (no .item(), no host sync).
// Why unusual: a 0-dim upstream gradient, int64 targets that get no gradient (the task's
// backward returns None for them), rows of 10 or 100 classes, 64 rows in the small
// configuration: a launch-bound problem where a timer that assumes big kernels misjudges.
// What the verifier must say: passed, then benchmarked (the 64x10 configuration is tiny:
// if the harness refuses to time a configuration, it must say tiny-problem for that
// configuration only, not reject the kernel).
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>

#define ROWS_PER_BLOCK 8
#define COUNT_THREADS 256
#define IGNORE_INDEX (-100)

__global__ void __launch_bounds__(COUNT_THREADS)
count_valid_targets(const int64_t* __restrict__ t, int64_t B, long long* __restrict__ count) {
  __shared__ long long sh[COUNT_THREADS / 32];
  long long c = 0;
  for (int64_t i = threadIdx.x; i < B; i += COUNT_THREADS) c += (t[i] != IGNORE_INDEX);
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long total = 0;
    for (int w = 0; w < COUNT_THREADS / 32; ++w) total += sh[w];
    *count = total;
  }
}

__global__ void __launch_bounds__(32 * ROWS_PER_BLOCK)
ce_backward_rows(const float* __restrict__ go, const float* __restrict__ p, const int64_t* __restrict__ t,
                 const long long* __restrict__ count, float* __restrict__ grad, int64_t B, int64_t C) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= B) return;  // whole warps leave together
  const float* pr = p + row * C;
  float* gr = grad + row * C;
  const int64_t target = t[row];
  if (target == IGNORE_INDEX) {
    for (int64_t c = lane; c < C; c += 32) gr[c] = 0.f;
    return;
  }
  float m = -INFINITY;
  for (int64_t c = lane; c < C; c += 32) m = fmaxf(m, pr[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int64_t c = lane; c < C; c += 32) s += expf(pr[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float scale = go[0] / (float)(*count);
  const float inv = 1.f / s;
  for (int64_t c = lane; c < C; c += 32) {
    const float sm = expf(pr[c] - m) * inv;
    gr[c] = scale * (sm - (c == target ? 1.f : 0.f));
  }
}

torch::Tensor backward(torch::Tensor grad_output, torch::Tensor predictions, torch::Tensor targets) {
  TORCH_CHECK(grad_output.is_cuda() && predictions.is_cuda() && targets.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(predictions.scalar_type() == torch::kFloat32 && grad_output.scalar_type() == torch::kFloat32,
              "float32 predictions and grad_output expected");
  TORCH_CHECK(targets.scalar_type() == torch::kInt64, "int64 targets expected");
  TORCH_CHECK(predictions.dim() == 2 && targets.dim() == 1 && grad_output.numel() == 1, "shapes");
  const int64_t B = predictions.size(0), C = predictions.size(1);
  TORCH_CHECK(targets.size(0) == B, "one target per row");
  auto p = predictions.contiguous();
  auto t = targets.contiguous();
  auto go = grad_output.contiguous();
  auto grad = torch::empty({B, C}, p.options());
  if (B == 0 || C == 0) return grad;
  auto count = torch::empty({1}, t.options());  // int64 on the device
  count_valid_targets<<<1, COUNT_THREADS>>>(t.data_ptr<int64_t>(), B, (long long*)count.data_ptr<int64_t>());
  cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "count_valid_targets launch failed: ", cudaGetErrorString(err));
  const int64_t blocks = (B + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
  TORCH_CHECK(blocks <= 0x7fffffffLL, "too many rows");
  ce_backward_rows<<<(unsigned)blocks, 32 * ROWS_PER_BLOCK>>>(go.data_ptr<float>(), p.data_ptr<float>(),
                                                               t.data_ptr<int64_t>(),
                                                               (const long long*)count.data_ptr<int64_t>(),
                                                               grad.data_ptr<float>(), B, C);
  err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "ce_backward_rows launch failed: ", cudaGetErrorString(err));
  return grad;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("backward", &backward, "cross-entropy (mean) backward: own kernels, 0-dim grad_output");
}
