# Correct (expect pass, check bench). kernels/softmax, .py candidate with load_inline (issue 18.3).
# What it is: the same one-block-per-row softmax (fp64 sum of exponentials), under the
# precision boilerplate many published solutions start with: TF32 allowed for cuBLAS and
# cuDNN, and torch.set_float32_matmul_precision("high").
# Why unusual: the flags lower the precision of fp32 matrix products and convolutions,
# process-wide. The harness scopes them to the candidate's calls (the reference and the
# baselines keep TF32 off) and judges precision by the task's tolerance, not by the flag: this
# candidate launches no GEMM or convolution, so its results are full fp32 and it passes.
# (A candidate whose fp32 GEMM does run in TF32 is judged by its error, as the adversarial
# corpus's TF32 wmma GEMM, gemm_bias_relu/07b, is: reduced-precision.)
# What the verifier must say: passed, with a warning naming each changed flag
# (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
# torch.float32_matmul_precision; evidence.backendFlags); then benchmarked.
import torch
from torch.utils.cpp_extension import load_inline

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("high")

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_rows_tf32_boilerplate(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
  __shared__ float sh_m[THREADS / 32];
  __shared__ double sh_s[THREADS / 32];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) sh_m[warp] = m;
  __syncthreads();
  m = lane < THREADS / 32 ? sh_m[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < N; j += THREADS) s += (double)expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sh_s[warp] = s;
  __syncthreads();
  s = lane < THREADS / 32 ? sh_s[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = (float)(1.0 / s);
  for (int64_t j = threadIdx.x; j < N; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

torch::Tensor softmax_fwd(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "2-D CUDA float32 expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t M = xc.size(0), N = xc.size(1);
  if (M == 0 || N == 0) return y;
  softmax_rows_tf32_boilerplate<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evkc_softmax_tf32_flags_22",
    cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
    cuda_sources=_CUDA_SRC,
    functions=["softmax_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def forward(x):
    return _ext.softmax_fwd(x)
