// saxpy.cu - SAXPY kernel and its host-side wrappers (CUDA runtime API only,
// so the module links against libcudart and never directly against libcuda).
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "saxpy.h"

// Grid-stride loop: correct for any n, whatever grid size is launched.
__global__ void saxpy_kernel(float a, const float *__restrict__ x,
                             const float *__restrict__ y,
                             float *__restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = a * x[i] + y[i];
}

// Record a failed CUDA call in err and return its code. `call` is the
// stringified call; only the function name (up to the '(') is reported.
static int fail(cudaError_t e, const char *call, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s (%s from %.*s)", cudaGetErrorString(e),
                 cudaGetErrorName(e), (int)strcspn(call, "("), call);
    return (int)e;
}

// Evaluate a CUDA call; on error, record it and jump to the cleanup label.
#define CHECK(call)                                                    \
    do {                                                               \
        cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                       \
            rc = fail(e_, #call, err, errlen);                         \
            goto cleanup;                                              \
        }                                                              \
    } while (0)

extern "C" int saxpy_run(float a, const float *x, const float *y, float *out,
                         size_t n, char *err, size_t errlen)
{
    float *d_x = NULL, *d_y = NULL, *d_out = NULL;
    const size_t bytes = n * sizeof(float);
    const unsigned threads = 256;
    // Enough blocks to cover n, capped; the grid-stride loop does the rest.
    const size_t want = (n + threads - 1) / threads;
    const unsigned blocks = (unsigned)(want < 65535 ? want : 65535);
    int rc = 0;

    if (n == 0)
        return 0;

    CHECK(cudaMalloc((void **)&d_x, bytes));
    CHECK(cudaMalloc((void **)&d_y, bytes));
    CHECK(cudaMalloc((void **)&d_out, bytes));
    CHECK(cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_y, y, bytes, cudaMemcpyHostToDevice));

    saxpy_kernel<<<blocks, threads>>>(a, d_x, d_y, d_out, n);
    CHECK(cudaGetLastError());       // launch errors
    CHECK(cudaDeviceSynchronize());  // errors while the kernel ran

    CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));

cleanup:
    // cudaFree(NULL) is a no-op; its own errors must not mask the first one.
    cudaFree(d_out);
    cudaFree(d_y);
    cudaFree(d_x);
    return rc;
}

extern "C" int saxpy_device_count(int *count, char *err, size_t errlen)
{
    int rc = 0;
    *count = 0;
    CHECK(cudaGetDeviceCount(count));
cleanup:
    return rc;
}

extern "C" int saxpy_runtime_version(void)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" int saxpy_driver_version(void)
{
    int v = 0;
    // Succeeds with v == 0 when no driver is installed.
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}
