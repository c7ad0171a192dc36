/* saxpy.h - C interface to the CUDA code in saxpy.cu.
 *
 * Functions that can fail return 0 on success; on failure they return a
 * non-zero CUDA error code and write a NUL-terminated message (built from
 * cudaGetErrorString) into err[0..errlen).
 */
#ifndef SAXPY_H
#define SAXPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a * x[i] + y[i] for i < n, computed on the current CUDA device.
 * x, y and out are host pointers. n == 0 succeeds without touching CUDA. */
int saxpy_run(float a, const float *x, const float *y, float *out, size_t n,
              char *err, size_t errlen);

/* Number of CUDA devices (cudaGetDeviceCount). Fails when there is no
 * usable driver/device. */
int saxpy_device_count(int *count, char *err, size_t errlen);

/* CUDA runtime version the module was built against/loaded, e.g. 13000
 * (cudaRuntimeGetVersion); 0 if it cannot be queried. */
int saxpy_runtime_version(void);

/* Latest CUDA version supported by the installed driver, e.g. 13000
 * (cudaDriverGetVersion); 0 when no driver is installed. */
int saxpy_driver_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SAXPY_H */
