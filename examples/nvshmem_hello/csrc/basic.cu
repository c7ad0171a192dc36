// basic.cu - CUDA runtime queries for nvshmem_hello._basic (no NVSHMEM).
#include <cuda_runtime.h>

#include "basic.h"

extern "C" int basic_runtime_version(void)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" int basic_driver_version(void)
{
    int v = 0;
    // Succeeds with v == 0 when no driver is installed.
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        return 0;
    return v;
}

extern "C" int basic_device_count(int *count)
{
    *count = 0;
    return (int)cudaGetDeviceCount(count);
}

extern "C" const char *basic_error_name(int code)
{
    return cudaGetErrorName((cudaError_t)code);
}

extern "C" const char *basic_error_string(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}
