/* cublas_scale.h - C interface to the CUDA/cuBLAS code in axpy_dot.cu.
 *
 * Functions that can fail return 0 on success; on failure they return a
 * non-zero code (a cudaError_t or cublasStatus_t value, or -1 for a bad
 * argument) and write a NUL-terminated message into err[0..errlen).
 */
#ifndef CUBLAS_SCALE_H
#define CUBLAS_SCALE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a * x[i] + y[i] for i < n (own kernel), then
 * *dot = sum_i out[i] * x[i] (cublasSdot), on the current CUDA device.
 * x, y and out are host pointers; n must not exceed INT_MAX (cuBLAS takes
 * an int length). n == 0 succeeds with *dot = 0 without touching CUDA. */
int cs_axpy_dot(float a, const float *x, const float *y, float *out,
                size_t n, float *dot, char *err, size_t errlen);

/* Version of the loaded cuBLAS library (cublasGetVersion; cuBLAS 12 and
 * 13 encode it as major * 10000 + minor * 100 + patch). Needs a cuBLAS
 * handle, so it fails without a usable GPU. */
int cs_cublas_version(int *version, char *err, size_t errlen);

/* Number of CUDA devices (cudaGetDeviceCount). Fails when there is no
 * usable driver/device. */
int cs_device_count(int *count, char *err, size_t errlen);

/* CUDA runtime version (cudaRuntimeGetVersion), e.g. 13000; 0 if it
 * cannot be queried. */
int cs_runtime_version(void);

/* Latest CUDA version supported by the installed driver
 * (cudaDriverGetVersion); 0 when no driver is installed. */
int cs_driver_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CUBLAS_SCALE_H */
