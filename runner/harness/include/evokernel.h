// evokernel.h — the ABI of evokernel's fast candidate format ("evk").
//
// A candidate in this format is one .cu file that includes this header and defines
//
//   extern "C" int evk_forward(const EvkCall* call);    // forward tasks
//   extern "C" int evk_backward(const EvkCall* call);   // backward tasks
//
// The harness allocates every output (already shaped, and filled with NaN so that an
// element the kernel never writes is caught), passes the inputs and outputs as EvkTensor
// views, and gives the stream to launch on. The function returns 0, or a cudaError_t /
// its own non-zero code on failure. It must not allocate outputs, synchronise the device,
// create streams or threads, or keep pointers between calls.
//
// It is built with plain nvcc (no torch headers), in about a second:
//   nvcc -O3 -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC -I<this dir> kernel.cu
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

#define EVK_MAX_DIMS 8

// dtype codes (EvkTensor::dtype)
#define EVK_FLOAT32 0
#define EVK_FLOAT16 1
#define EVK_BFLOAT16 2
#define EVK_FLOAT64 3
#define EVK_INT32 4
#define EVK_INT64 5
#define EVK_BOOL 6
#define EVK_UINT8 7
#define EVK_INT8 8

typedef struct EvkTensor {
  void* data;                      // device pointer
  int64_t shape[EVK_MAX_DIMS];     // sizes, ndim of them valid
  int64_t stride[EVK_MAX_DIMS];    // strides in elements (inputs are contiguous unless a task says otherwise)
  int32_t ndim;
  int32_t dtype;                   // EVK_* code
} EvkTensor;

typedef struct EvkCall {
  const EvkTensor* inputs;   // the task's inputs, in order (backward: grad outputs first, then inputs)
  int32_t n_inputs;
  EvkTensor* outputs;        // preallocated outputs, in order (backward: one gradient per input that requires it)
  int32_t n_outputs;
  const double* scalars;     // non-tensor arguments (KernelBench get_inputs() may return ints/floats)
  int32_t n_scalars;
  cudaStream_t stream;       // launch every kernel on this stream
} EvkCall;

static inline int64_t evk_numel(const EvkTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}
