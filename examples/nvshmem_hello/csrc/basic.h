/* basic.h - C interface to the CUDA runtime queries in basic.cu. */
#ifndef NVSHMEM_HELLO_BASIC_H
#define NVSHMEM_HELLO_BASIC_H

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA runtime version (cudaRuntimeGetVersion), e.g. 13000 for 13.0; 0 if
 * it cannot be queried. */
int basic_runtime_version(void);

/* Latest CUDA version the installed driver supports
 * (cudaDriverGetVersion); 0 when no driver is installed. */
int basic_driver_version(void);

/* Number of CUDA devices in *count. Returns 0 on success, otherwise a
 * cudaError_t value that basic_error_name()/basic_error_string() describe. */
int basic_device_count(int *count);

/* Name ("cudaErrorNoDevice") and description of an error code returned
 * above. Never NULL. */
const char *basic_error_name(int code);
const char *basic_error_string(int code);

#ifdef __cplusplus
}
#endif

#endif /* NVSHMEM_HELLO_BASIC_H */
