/* calc.h - public C API of libcalc, a small CUDA shared library.
 *
 * libcalc is an ordinary shared library (no Python in it): any C or C++
 * program can link it. Callers need neither the CUDA headers nor nvcc.
 *
 * Functions that can fail return 0 on success and otherwise a CUDA error
 * code (a cudaError_t value) that calc_error_name()/calc_error_string()
 * describe.
 */
#ifndef CALC_H
#define CALC_H

#include <stddef.h>

#if defined(__GNUC__)
#define CALC_API __attribute__((visibility("default")))
#else
#define CALC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* *out = sum of x[i] * x[i] for i < n, computed on the current CUDA device
 * by a parallel reduction (accumulated in double precision, rounded once
 * to float). x is a host pointer. n == 0 gives *out = 0 without touching
 * CUDA. */
CALC_API int calc_square_sum(const float *x, size_t n, float *out);

/* Number of CUDA devices (cudaGetDeviceCount). */
CALC_API int calc_device_count(int *count);

/* CUDA runtime version libcalc runs with (cudaRuntimeGetVersion), e.g.
 * 13000 for 13.0; 0 if it cannot be queried. */
CALC_API int calc_runtime_version(void);

/* Latest CUDA version the installed driver supports
 * (cudaDriverGetVersion); 0 when no driver is installed. */
CALC_API int calc_driver_version(void);

/* Name ("cudaErrorNoDevice") and description of an error code returned
 * by the functions above. Never NULL. */
CALC_API const char *calc_error_name(int code);
CALC_API const char *calc_error_string(int code);

#ifdef __cplusplus
}
#endif

#endif /* CALC_H */
