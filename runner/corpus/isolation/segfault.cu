// Isolation: dereferences a null host pointer inside evk_forward (a segfault in the harness
// process). Expect: status "crash" (signal 11) for this candidate only.
#include <evokernel.h>

extern "C" int evk_forward(const EvkCall* call) {
  volatile int* p = nullptr;
  return *p + call->n_inputs;
}
