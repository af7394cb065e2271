# Correct (expect pass, check bench). kernels/softmax, .py candidate with load_inline (issue 18.9).
# What it is: the rows split in two halves, each computed by the candidate's own kernel on a
# stream of its own. Each side stream first waits for the caller's stream (the input is
# ready), the caller's stream then waits for both (the output is complete), and the
# tensors used on a side stream are recorded there for the caching allocator.
# Why unusual: the static check used to refuse any torch.cuda.Stream ("side-stream"). The
# timer now sees every stream: all of this work lies between the caller's events.
# What the verifier must say: passed (check all-work-timed: its work on 3 streams lies within
# the timed window); then benchmarked.
import torch
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <math.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
softmax_rows_halves(const float* __restrict__ x, float* __restrict__ y, int64_t N) {
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
  softmax_rows_halves<<<(unsigned)M, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="evkc_softmax_two_streams_18",
    cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
    cuda_sources=_CUDA_SRC,
    functions=["softmax_fwd"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)
_streams = {}


def _side(device):
    if device not in _streams:
        _streams[device] = (torch.cuda.Stream(device), torch.cuda.Stream(device))
    return _streams[device]


def forward(x):
    x = x.contiguous()
    half = x.shape[0] // 2
    if half == 0:
        return _ext.softmax_fwd(x)
    caller = torch.cuda.current_stream(x.device)
    y = torch.empty_like(x)
    for s, rows in zip(_side(x.device), (slice(0, half), slice(half, x.shape[0]))):
        s.wait_stream(caller)
        with torch.cuda.stream(s):
            y[rows].copy_(_ext.softmax_fwd(x[rows]))
        x.record_stream(s)
        y.record_stream(s)
    for s in _side(x.device):
        caller.wait_stream(s)
    return y
