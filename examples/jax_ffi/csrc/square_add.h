// square_add: out = a * x * x + y, and its gradient with respect to x: gx = 2 * a * x * g.
// The CUDA launchers are plain C functions of the shared library (libjax_ffi_cuda.so) so a
// harness without JAX can run the very kernels the XLA FFI handlers launch.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Launch on `stream` (a cudaStream_t); return a cudaError_t as int (0: success).
int jax_ffi_square_add_f32(const float* x, const float* y, float a, float* out, int64_t n,
                           void* stream);
int jax_ffi_square_add_grad_f32(const float* g, const float* x, float a, float* gx, int64_t n,
                                void* stream);

#ifdef __cplusplus
}
#endif
