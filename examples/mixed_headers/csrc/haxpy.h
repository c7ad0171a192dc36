// haxpy.h - what the kernels' file offers the host code.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// CUDART_VERSION of the headers haxpy.cu was compiled against.
int haxpy_cu_cudart_version();
// out[i] = a * x[i] + y[i] in half precision, on device pointers.
cudaError_t haxpy_launch(__half a, const __half *x, const __half *y, __half *out, size_t n);
