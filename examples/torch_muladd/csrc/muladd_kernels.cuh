// The CUDA kernels of torch_muladd behind a plain C interface (raw pointers and a stream), so
// that the torch operator (muladd_cuda.cu) and a torch-free test program run the same code.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// out[i] = a[i] * b[i] + c
cudaError_t muladd_forward_f32(const float* a, const float* b, float c, float* out, int64_t n,
                               cudaStream_t stream);

// grad_a[i] = grad[i] * b[i], grad_b[i] = grad[i] * a[i] (one pass over the inputs)
cudaError_t muladd_backward_f32(const float* grad, const float* a, const float* b, float* grad_a,
                                float* grad_b, int64_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
