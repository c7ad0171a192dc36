// nvshmem_ext.cu - NVSHMEM on the host and on the device.
//
// The kernel below calls NVSHMEM device functions, so this file is compiled
// as relocatable device code (nvcc -rdc=true) and device-linked against the
// static libnvshmem_device.a; the host side links libnvshmem_host.so.
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_ext.h"

// Each PE puts its own number into `dest` on the next PE of the ring.
// nvshmem_my_pe(), nvshmem_n_pes() and nvshmem_int_p() here are the device
// implementations from libnvshmem_device.a.
__global__ void ring_put(int *dest)
{
    int me = nvshmem_my_pe();
    int npes = nvshmem_n_pes();
    nvshmem_int_p(dest, me, (me + 1) % npes);
}

// Evaluate a CUDA call; on error, record it (naming only the function,
// up to the '(' of the stringified call) and go to cleanup.
#define CHECK(call)                                                        \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        if (e_ != cudaSuccess) {                                           \
            snprintf(err, errlen, "%s (%s from %.*s)",                     \
                     cudaGetErrorString(e_), cudaGetErrorName(e_),         \
                     (int)strcspn(#call, "("), #call);                     \
            rc = (int)e_;                                                  \
            goto cleanup;                                                  \
        }                                                                  \
    } while (0)

extern "C" void nh_library_version(int *major, int *minor, int *patch)
{
    nvshmemx_vendor_get_version_info(major, minor, patch);
}

extern "C" void nh_header_version(int *major, int *minor, int *patch)
{
    *major = NVSHMEM_VENDOR_MAJOR_VERSION;
    *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

extern "C" int nh_is_initialized(void)
{
    // Right after nvshmem_init() the status is only IS_BOOTSTRAPPED: NVSHMEM
    // sets up its device state lazily, at the first call that needs it
    // (nvshmem_malloc, a collective, ...). PE queries work from here on.
    int status = nvshmemx_init_status();
    return status >= NVSHMEM_STATUS_IS_BOOTSTRAPPED &&
           status != NVSHMEM_STATUS_INVALID;
}

extern "C" int nh_init(char *err, size_t errlen)
{
    int devices = 0, rc = 0;

    if (nh_is_initialized())
        return 0;
    // nvshmem_init() exits the process when it fails; rule out the most
    // common cause (no usable GPU/driver) first and fail cleanly instead.
    CHECK(cudaGetDeviceCount(&devices));
    nvshmem_init();
    // One GPU per PE on each node, as in NVSHMEM's own examples.
    CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % devices));
cleanup:
    return rc;
}

extern "C" void nh_finalize(void)
{
    if (nh_is_initialized())
        nvshmem_finalize();
}

extern "C" int nh_my_pe(void)
{
    return nvshmem_my_pe();
}

extern "C" int nh_n_pes(void)
{
    return nvshmem_n_pes();
}

extern "C" int nh_ring_exchange(int *received, char *err, size_t errlen)
{
    cudaStream_t stream = NULL;
    int *dest = NULL;
    int rc = 0;

    *received = -1;
    if (!nh_is_initialized()) {
        snprintf(err, errlen, "NVSHMEM is not initialised (call init())");
        return -1;
    }
    CHECK(cudaStreamCreate(&stream));
    // Symmetric allocation (collective): the same object on every PE.
    dest = (int *)nvshmem_malloc(sizeof(int));
    if (dest == NULL) {
        snprintf(err, errlen, "nvshmem_malloc failed");
        rc = -1;
        goto cleanup;
    }
    CHECK(cudaMemsetAsync(dest, 0xff, sizeof(int), stream));
    nvshmemx_barrier_all_on_stream(stream);  // all PEs cleared dest

    ring_put<<<1, 1, 0, stream>>>(dest);
    CHECK(cudaGetLastError());
    nvshmemx_barrier_all_on_stream(stream);  // all puts have landed

    CHECK(cudaMemcpyAsync(received, dest, sizeof(int),
                          cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));

cleanup:
    if (dest != NULL)
        nvshmem_free(dest);  // collective as well
    if (stream != NULL)
        cudaStreamDestroy(stream);
    return rc;
}
