// axpy_dot.cu - an own CUDA kernel (axpy) followed by a cuBLAS call (sdot).
//
// Uses only the CUDA runtime API and the cuBLAS v2 API as they exist in
// CUDA 11.8, so the same source builds with CUDA 11.8, 12.x and 13.x.
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cublas_scale.h"

// out[i] = a * x[i] + y[i]; grid-stride loop, correct for any n.
__global__ void axpy_kernel(float a, const float *__restrict__ x,
                            const float *__restrict__ y,
                            float *__restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = a * x[i] + y[i];
}

// cuBLAS status names. Spelled out here (rather than cublasGetStatusString)
// so that nothing beyond the CUDA 11.8 API is needed.
static const char *cublas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

// Length of the function name in a stringified call ("f(a, b)" -> 1).
static int name_len(const char *call)
{
    return (int)strcspn(call, "(");
}

// Evaluate a CUDA runtime call; on error, record it and go to cleanup.
#define CUDA_CHECK(call)                                                   \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        if (e_ != cudaSuccess) {                                           \
            snprintf(err, errlen, "%s (%s from %.*s)",                     \
                     cudaGetErrorString(e_), cudaGetErrorName(e_),         \
                     name_len(#call), #call);                              \
            rc = (int)e_;                                                  \
            goto cleanup;                                                  \
        }                                                                  \
    } while (0)

// Evaluate a cuBLAS call; on error, record it and go to cleanup.
#define CUBLAS_CHECK(call)                                                 \
    do {                                                                   \
        cublasStatus_t s_ = (call);                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                 \
            snprintf(err, errlen, "%s from %.*s", cublas_status_name(s_),  \
                     name_len(#call), #call);                              \
            rc = (int)s_;                                                  \
            goto cleanup;                                                  \
        }                                                                  \
    } while (0)

extern "C" int cs_axpy_dot(float a, const float *x, const float *y,
                           float *out, size_t n, float *dot, char *err,
                           size_t errlen)
{
    cublasHandle_t handle = NULL;
    float *d_x = NULL, *d_y = NULL, *d_out = NULL;
    const size_t bytes = n * sizeof(float);
    const unsigned threads = 256;
    const size_t want = (n + threads - 1) / threads;
    const unsigned blocks = (unsigned)(want < 65535 ? want : 65535);
    int rc = 0;

    *dot = 0.0f;
    if (n == 0)
        return 0;
    if (n > (size_t)INT_MAX) {
        snprintf(err, errlen, "n = %zu exceeds the cuBLAS limit %d", n,
                 INT_MAX);
        return -1;
    }

    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, y, bytes, cudaMemcpyHostToDevice));

    // The kernel and cuBLAS both use the legacy default stream, so the
    // sdot below is ordered after the kernel without extra synchronisation.
    axpy_kernel<<<blocks, threads>>>(a, d_x, d_y, d_out, n);
    CUDA_CHECK(cudaGetLastError());

    CUBLAS_CHECK(cublasCreate(&handle));
    // Host pointer mode (the default): the result lands in *dot and the
    // call returns once it is there.
    CUBLAS_CHECK(cublasSdot(handle, (int)n, d_out, 1, d_x, 1, dot));

    CUDA_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));

cleanup:
    // Errors while cleaning up must not mask the first one.
    if (handle != NULL)
        cublasDestroy(handle);
    cudaFree(d_out);
    cudaFree(d_y);
    cudaFree(d_x);
    return rc;
}

extern "C" int cs_cublas_version(int *version, char *err, size_t errlen)
{
    cublasHandle_t handle = NULL;
    int devices = 0, rc = 0;

    *version = 0;
    // cublasCreate only says CUBLAS_STATUS_NOT_INITIALIZED when there is no
    // usable driver or device; ask the runtime first for a clearer error.
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasGetVersion(handle, version));
cleanup:
    if (handle != NULL)
        cublasDestroy(handle);
    return rc;
}

extern "C" int cs_device_count(int *count, char *err, size_t errlen)
{
    int rc = 0;
    *count = 0;
    CUDA_CHECK(cudaGetDeviceCount(count));
cleanup:
    return rc;
}

extern "C" int cs_runtime_version(void)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" int cs_driver_version(void)
{
    int v = 0;
    // Succeeds with v == 0 when no driver is installed.
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}
