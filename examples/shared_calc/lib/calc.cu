// calc.cu - libcalc: a sum of squares on the GPU, behind a plain C API.
//
// CUDA runtime API only, nothing newer than CUDA 11.8, so the same source
// builds with CUDA 11.8, 12.x and 13.x.
#include <cuda_runtime.h>

#include "calc.h"

// Threads per block; the block reduction below needs a power of two.
#define CALC_THREADS 256
// At most this many blocks in the first pass, so that the second pass
// (one block) has little to add up.
#define CALC_MAX_BLOCKS 1024

// Sum of acc over the threads of the block, returned to every thread.
// Every thread of the block must call it, at most once per kernel.
static __device__ double block_sum(double acc)
{
    __shared__ double s[CALC_THREADS];

    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = CALC_THREADS / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    return s[0];
}

// First pass: partial[b] = sum of x[i]^2 over the elements block b visits
// (grid-stride loop, correct for any n).
__global__ void square_sum_partial(const float *__restrict__ x, size_t n,
                                   double *__restrict__ partial)
{
    size_t stride = (size_t)gridDim.x * CALC_THREADS;
    double acc = 0.0;

    for (size_t i = (size_t)blockIdx.x * CALC_THREADS + threadIdx.x; i < n;
         i += stride) {
        double v = x[i];
        acc += v * v;
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

// Second pass, one block: *total = sum of partial[0..n).
__global__ void sum_partials(const double *__restrict__ partial, unsigned n,
                             double *__restrict__ total)
{
    double acc = 0.0;

    for (unsigned i = threadIdx.x; i < n; i += CALC_THREADS)
        acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        *total = acc;
}

// Evaluate a CUDA call; on error, keep its code and go to cleanup.
#define CHECK(call)                                                    \
    do {                                                               \
        cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                       \
            rc = (int)e_;                                              \
            goto cleanup;                                              \
        }                                                              \
    } while (0)

extern "C" int calc_square_sum(const float *x, size_t n, float *out)
{
    float *d_x = NULL;
    double *d_partial = NULL, total = 0.0;
    const size_t want = (n + CALC_THREADS - 1) / CALC_THREADS;
    const unsigned blocks =
        (unsigned)(want < CALC_MAX_BLOCKS ? want : CALC_MAX_BLOCKS);
    int rc = 0;

    *out = 0.0f;
    if (n == 0)
        return 0;

    CHECK(cudaMalloc((void **)&d_x, n * sizeof(float)));
    // One extra slot at the end receives the total.
    CHECK(cudaMalloc((void **)&d_partial, (blocks + 1) * sizeof(double)));
    CHECK(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));

    square_sum_partial<<<blocks, CALC_THREADS>>>(d_x, n, d_partial);
    CHECK(cudaGetLastError());
    sum_partials<<<1, CALC_THREADS>>>(d_partial, blocks, d_partial + blocks);
    CHECK(cudaGetLastError());

    // Synchronous copy on the default stream: waits for both kernels and
    // reports errors raised while they ran.
    CHECK(cudaMemcpy(&total, d_partial + blocks, sizeof(double),
                     cudaMemcpyDeviceToHost));
    *out = (float)total;

cleanup:
    // cudaFree(NULL) is a no-op; its own errors must not mask the first one.
    cudaFree(d_partial);
    cudaFree(d_x);
    return rc;
}

extern "C" int calc_device_count(int *count)
{
    *count = 0;
    return (int)cudaGetDeviceCount(count);
}

extern "C" int calc_runtime_version(void)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" int calc_driver_version(void)
{
    int v = 0;
    // Succeeds with v == 0 when no driver is installed.
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" const char *calc_error_name(int code)
{
    return cudaGetErrorName((cudaError_t)code);
}

extern "C" const char *calc_error_string(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}
