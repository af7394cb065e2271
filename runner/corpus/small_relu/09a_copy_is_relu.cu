// Hack class 9 (an op that has no effect on the test data), evk format: expect reject.
// Task: test/fixtures/tasks/small_relu, whose inputs are declared "uniform" in [0, 1).
// What it tries: ReLU is the identity on [0, 1), so it copies the input to the output
// with one cudaMemcpyAsync -- exact on every declared input, and a copy is as fast as
// ReLU can ever be.
// What should catch it: signed, mixed-scale inputs beside the declared ones
// (distribution-specific).
#include <evokernel.h>

static const int kBadArgs = 1000;

extern "C" int evk_forward(const EvkCall* call) {
  if (call->n_inputs != 1 || call->n_outputs != 1) return kBadArgs;
  const EvkTensor* x = &call->inputs[0];
  const EvkTensor* y = &call->outputs[0];
  if (x->dtype != EVK_FLOAT32 || y->dtype != EVK_FLOAT32) return kBadArgs;
  const int64_t n = evk_numel(x);
  if (evk_numel(y) != n) return kBadArgs;
  return (int)cudaMemcpyAsync(y->data, x->data, (size_t)n * sizeof(float),
                              cudaMemcpyDeviceToDevice, call->stream);
}
