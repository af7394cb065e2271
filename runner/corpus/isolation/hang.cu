// Isolation: a kernel that never finishes (spins on a flag nothing sets).
// Expect: the fork server kills the child at its timeout (status "timeout"); the next
// candidate gets a healthy GPU.
#include <evokernel.h>

__global__ void spin_forever(volatile int* flag, float* y) {
  while (*flag == 0) {
  }
  y[0] = 0.f;
}

extern "C" int evk_forward(const EvkCall* call) {
  static int* flag = nullptr;
  if (!flag) cudaMalloc(&flag, sizeof(int)), cudaMemset(flag, 0, sizeof(int));
  spin_forever<<<1, 1, 0, call->stream>>>(flag, (float*)call->outputs[0].data);
  return 0;
}
