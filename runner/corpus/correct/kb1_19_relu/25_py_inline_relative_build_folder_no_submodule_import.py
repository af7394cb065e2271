# Correct (expect pass, check bench). KernelBench level 1, 19_ReLU
# (task "shared:kernelbench/KernelBench/level1/19_ReLU.py"), .py candidate: `ModelNew`
# with a load_inline kernel (entry 09's kernel), built the way many published candidates
# build theirs (issue 33.4 and 33.5).
# What it is: `import torch` alone, then `torch.utils.cpp_extension.load_inline` (the
# submodule is never imported by the candidate: KernelBench's evaluation imports it before
# it runs one, so there it builds); the CUDA source written to a scratch file
# `cuda_code/relu_kernel.cu` and read back; the extension built into the relative folder
# `cuda_extensions` (`os.makedirs`, `build_directory=`).
# Why unusual: in the sandbox the working folder was its read-only root: the writes failed
# with EROFS (issue 33.4), and without the harness importing the submodule the attribute
# does not exist (issue 33.5). Each command now runs in a private writable folder of its
# own, and the KernelBench format sees `torch.utils.cpp_extension` imported.
# What the verifier must say: passed on every configuration, then benchmarked; nothing it
# wrote is left in the repository; its build stage's folder is kept beside its build (a
# snapshot), so verification finds the extension built, at the same path, and does not build
# it again under the GPU lock.
import os

import torch
import torch.nn as nn

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define THREADS 256

__device__ __forceinline__ float relu1(float v) { return (v > 0.f || isnan(v)) ? v : 0.f; }

__global__ void __launch_bounds__(THREADS)
relu_grid_stride(const float* __restrict__ x, float* __restrict__ y, int64_t n, int vec) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  const int64_t t0 = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  int64_t done = 0;
  if (vec) {
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = t0; i < n4; i += stride) {
      const float4 v = x4[i];
      y4[i] = make_float4(relu1(v.x), relu1(v.y), relu1(v.z), relu1(v.w));
    }
    done = n4 * 4;
  }
  for (int64_t i = done + t0; i < n; i += stride) y[i] = relu1(x[i]);
}

torch::Tensor relu_fwd(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "CUDA tensor expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const int vec = ((((uintptr_t)xp) | ((uintptr_t)yp)) & 15) == 0 ? 1 : 0;
  const int64_t work = vec ? (n + 3) / 4 : n;
  int64_t blocks = (work + THREADS - 1) / THREADS;
  if (blocks > 8192) blocks = 8192;  // grid-stride loop covers the rest
  relu_grid_stride<<<(unsigned)blocks, THREADS>>>(xp, yp, n, vec);
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "relu_grid_stride launch failed: ", cudaGetErrorString(err));
  return y;
}
"""


_CPP_SRC = "torch::Tensor relu_fwd(torch::Tensor x);"

os.makedirs("cuda_code", exist_ok=True)
with open("cuda_code/relu_kernel.cu", "w") as f:
    f.write(_CUDA_SRC)
with open("cuda_code/relu_kernel.cu") as f:
    _source = f.read()

os.makedirs("cuda_extensions", exist_ok=True)
_ext = torch.utils.cpp_extension.load_inline(  # no `import torch.utils.cpp_extension`
    name="evkc_kb1_19_relu_25",
    cpp_sources=_CPP_SRC,
    cuda_sources=_source,
    functions=["relu_fwd"],
    extra_cuda_cflags=["-O3"],
    build_directory="cuda_extensions",
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_fwd(x)
