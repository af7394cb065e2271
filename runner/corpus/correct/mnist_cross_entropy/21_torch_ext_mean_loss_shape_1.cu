// Correct (expect pass, check bench). robust-kbench mnist_cross_entropy, FORWARD
// (task "shared:robust-kbench/tasks/mnist_cross_entropy"), torch-ext format exporting
// `forward(predictions, targets) -> loss`: F.cross_entropy(predictions, targets,
// reduction="mean") for fp32 logits [B, C] and int64 targets [B].
// What it is: two own kernels, deterministic (no atomics):
//   ce_rows_partial  one warp per row: max, sum of exp(x - max), the row's loss
//                    log(sum) + max - x[target] (0 for a target equal to the ignore index,
//                    -100, as PyTorch does); each block writes its rows' loss sum (fp64)
//                    and how many rows counted
//   ce_finish        one block: sums the blocks' partials in a fixed order, writes
//                    loss_sum / n_valid as fp32 (NaN when every target is ignored, as
//                    PyTorch gives)
// and the loss is returned as a ONE-ELEMENT tensor of shape (1,), written
// `torch::empty({1}, ...)` the way published robust-kbench kernels allocate it, where the
// reference F.cross_entropy returns a 0-dim tensor, shape ().
// Why unusual: the shape. On 2026-11-24 (H100, 048cf7b) the run refused robust-kbench's
// highlighted cross-entropy kernel, which returns shape (1,), as `wrong-shape`; robust-kbench's
// own harness compares one value with one value and accepts it (issue 18.7). Any other shape
// difference stays `wrong-shape`. Also: 64 x 10 is a launch-bound configuration.
// What the verifier must say: passed, with the warning "output 0 has shape (1,) where the
// reference returns (): accepted, as robust-kbench's own harness compares one value with one
// value; return out.reshape(()) to match it exactly"; then benchmarked.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <math.h>

#define WARPS 8
#define THREADS (32 * WARPS)
#define IGNORE_INDEX (-100)

__global__ void __launch_bounds__(THREADS)
ce_rows_partial(const float* __restrict__ p, const int64_t* __restrict__ t, int64_t B, int64_t C,
                double* __restrict__ block_loss, long long* __restrict__ block_count) {
  __shared__ double sh_loss[WARPS];
  __shared__ long long sh_count[WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = (int64_t)blockIdx.x * WARPS + warp;
  double loss = 0.0;
  long long counted = 0;
  if (row < B) {  // whole warps take this branch together
    const int64_t target = t[row];
    if (target != IGNORE_INDEX) {
      const float* pr = p + row * C;
      float m = -INFINITY;
      for (int64_t c = lane; c < C; c += 32) m = fmaxf(m, pr[c]);
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      float s = 0.f;
      for (int64_t c = lane; c < C; c += 32) s += expf(pr[c] - m);
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      // log_softmax(x)[target] = x[target] - max - log(sum): the loss is its negation
      loss = (double)logf(s) + (double)m - (double)pr[target];
      counted = 1;
    }
  }
  if (lane == 0) {
    sh_loss[warp] = loss;
    sh_count[warp] = counted;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double l = 0.0;
    long long n = 0;
    for (int w = 0; w < WARPS; ++w) {
      l += sh_loss[w];
      n += sh_count[w];
    }
    block_loss[blockIdx.x] = l;
    block_count[blockIdx.x] = n;
  }
}

__global__ void __launch_bounds__(THREADS)
ce_finish(const double* __restrict__ block_loss, const long long* __restrict__ block_count, int64_t blocks,
          float* __restrict__ out) {
  __shared__ double sh_loss[THREADS];
  __shared__ long long sh_count[THREADS];
  double l = 0.0;
  long long n = 0;
  for (int64_t i = threadIdx.x; i < blocks; i += THREADS) {
    l += block_loss[i];
    n += block_count[i];
  }
  sh_loss[threadIdx.x] = l;
  sh_count[threadIdx.x] = n;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      sh_loss[threadIdx.x] += sh_loss[threadIdx.x + half];
      sh_count[threadIdx.x] += sh_count[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)(sh_loss[0] / (double)sh_count[0]);  // 0/0: NaN, as torch
}

torch::Tensor forward(torch::Tensor predictions, torch::Tensor targets) {
  TORCH_CHECK(predictions.is_cuda() && targets.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(predictions.scalar_type() == torch::kFloat32, "float32 predictions expected");
  TORCH_CHECK(targets.scalar_type() == torch::kInt64, "int64 targets expected");
  TORCH_CHECK(predictions.dim() == 2 && targets.dim() == 1 && targets.size(0) == predictions.size(0),
              "predictions [B, C] and targets [B] expected");
  auto p = predictions.contiguous();
  auto t = targets.contiguous();
  const int64_t B = p.size(0), C = p.size(1);
  auto out = torch::empty({1}, p.options());  // one element; the reference returns shape ()
  const int64_t blocks = B > 0 ? (B + WARPS - 1) / WARPS : 1;
  TORCH_CHECK(blocks <= 0x7fffffffLL, "too many rows");
  auto block_loss = torch::empty({blocks}, p.options().dtype(torch::kFloat64));
  auto block_count = torch::empty({blocks}, t.options());  // int64
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  ce_rows_partial<<<(unsigned)blocks, THREADS, 0, stream>>>(
      p.data_ptr<float>(), t.data_ptr<int64_t>(), B, C, block_loss.data_ptr<double>(),
      reinterpret_cast<long long*>(block_count.data_ptr<int64_t>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  ce_finish<<<1, THREADS, 0, stream>>>(block_loss.data_ptr<double>(),
                                       reinterpret_cast<const long long*>(block_count.data_ptr<int64_t>()), blocks,
                                       out.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "cross-entropy (mean) forward: own kernels, a (1,)-shaped loss");
}
