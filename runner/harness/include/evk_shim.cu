// Linked into every evk candidate's shared library by the harness. The candidate's
// static CUDA runtime is its own, so only code inside the library can read its last
// error: the harness calls this after every call to catch ignored launch failures.
#include <cuda_runtime.h>

extern "C" int evk_shim_last_error(void) { return (int)cudaGetLastError(); }
extern "C" const char* evk_shim_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
