// torch_axpy's CUDA kernel behind a plain C interface (raw pointers and a stream), so that the
// torch operator (axpy_cuda.cu) and a torch-free test program run the same code.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// out[i] = alpha * x[i] + y[i]
cudaError_t axpy_f32(const float* x, const float* y, float alpha, float* out, int64_t n,
                     cudaStream_t stream);

#ifdef __cplusplus
}
#endif
