// Correct (expect pass, check bench). robust-kbench llama_ffw, FORWARD
// (task "shared:robust-kbench/tasks/llama_ffw"), torch-ext format exporting
// `forward(x, gate_proj, up_proj, down_proj)`, fp32:
//   down = (silu(x @ gate_proj^T) * (x @ up_proj^T)) @ down_proj^T
// What it is: the construction of robust-kbench's highlighted Llama FFN kernel (issue 18):
// the three GEMMs through cuBLAS (at::mm on the flattened [tokens, features] input, as
// F.linear itself folds a 3-D input), and SwiGLU fused in ONE own kernel that reads the
// gate and up products once and writes silu(gate) * up in place over the gate product (a
// temporary of this call), float4 with a scalar tail. The reference launches the same GEMMs,
// then a SiLU kernel and a multiply kernel: two passes over [tokens, up_features] become one.
// silu is computed as PyTorch's CUDA kernel does (x / (1 + exp(-x)) in fp32, no fast math), so
// with TF32 off (the harness's setting; at::mm honours it) the output matches the
// reference to the last bits or within a few ulp.
// Why unusual: almost all of its GPU time is the library's GEMMs; its own code is only the
// elementwise middle. On 2026-11-24 (H100, 048cf7b) the run refused this construction as
// `torch-fallback` ("its own kernel replaces reference kernels"): a vendor library beside
// an own kernel that replaces the reference's SiLU and multiply is the candidate's design
// (issue 18.4), not a fallback.
// What the verifier must say: passed on every configuration, the check own-kernel-ran names
// swiglu_inplace_kernel and most of its GPU time in library kernels (the cuBLAS GEMMs,
// kernelShares.library); then benchmarked (about 1.0x against eager: the GEMMs dominate).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

#define THREADS 256

__device__ __forceinline__ float silu_mul(float g, float u) {
  return g / (1.0f + expf(-g)) * u;  // torch's silu, then torch's mul, both in fp32
}

__global__ void __launch_bounds__(THREADS)
swiglu_inplace_kernel(float* __restrict__ gate, const float* __restrict__ up, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  const int64_t first = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  const int64_t n4 = n / 4;
  float4* g4 = reinterpret_cast<float4*>(gate);
  const float4* u4 = reinterpret_cast<const float4*>(up);
  for (int64_t i = first; i < n4; i += stride) {
    float4 g = g4[i];
    const float4 u = u4[i];
    g.x = silu_mul(g.x, u.x);
    g.y = silu_mul(g.y, u.y);
    g.z = silu_mul(g.z, u.z);
    g.w = silu_mul(g.w, u.w);
    g4[i] = g;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += stride) gate[i] = silu_mul(gate[i], up[i]);
}

torch::Tensor forward(torch::Tensor x, torch::Tensor gate_proj, torch::Tensor up_proj, torch::Tensor down_proj) {
  TORCH_CHECK(x.is_cuda() && gate_proj.is_cuda() && up_proj.is_cuda() && down_proj.is_cuda(),
              "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && gate_proj.scalar_type() == torch::kFloat32 &&
                  up_proj.scalar_type() == torch::kFloat32 && down_proj.scalar_type() == torch::kFloat32,
              "float32 tensors expected");
  TORCH_CHECK(gate_proj.dim() == 2 && up_proj.sizes() == gate_proj.sizes() && down_proj.dim() == 2,
              "gate_proj, up_proj [up_features, num_features] and down_proj [num_features, up_features] expected");
  const int64_t features = gate_proj.size(1), up_features = gate_proj.size(0);
  TORCH_CHECK(x.size(-1) == features && down_proj.size(1) == up_features, "shape mismatch");

  auto x2 = x.contiguous().view({-1, features});      // [tokens, features]
  auto gate = at::mm(x2, gate_proj.t());              // cuBLAS, [tokens, up_features], contiguous
  auto up = at::mm(x2, up_proj.t());                  // cuBLAS
  const int64_t n = gate.numel();
  if (n > 0) {
    // 16-byte alignment for the float4 loop: fresh allocations from the caching allocator
    TORCH_CHECK(reinterpret_cast<uintptr_t>(gate.data_ptr<float>()) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(up.data_ptr<float>()) % 16 == 0,
                "unaligned GEMM outputs");
    int64_t blocks = (n / 4 + THREADS - 1) / THREADS;
    if (blocks < 1) blocks = 1;
    if (blocks > 132 * 16) blocks = 132 * 16;  // grid-stride covers the rest
    swiglu_inplace_kernel<<<(unsigned)blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        gate.data_ptr<float>(), up.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  auto down = at::mm(gate, down_proj.t());            // cuBLAS, [tokens, features]
  auto sizes = x.sizes().vec();
  sizes.back() = down_proj.size(0);
  return down.view(sizes);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "Llama FFN forward: cuBLAS GEMMs, own fused SwiGLU");
}
