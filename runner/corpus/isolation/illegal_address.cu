// Isolation: writes far outside its output, which kills the CUDA context.
// Expect: status "crash" for this candidate only; the next one runs on a healthy GPU.
#include <evokernel.h>

__global__ void scribble(float* y) { y[(size_t)1 << 40] = 1.f; }

extern "C" int evk_forward(const EvkCall* call) {
  scribble<<<1, 1, 0, call->stream>>>((float*)call->outputs[0].data);
  return 0;
}
