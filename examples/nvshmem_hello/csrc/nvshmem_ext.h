/* nvshmem_ext.h - C interface to the NVSHMEM code in nvshmem_ext.cu.
 *
 * Plain C, free of NVSHMEM and CUDA headers, so that nvshmem_module.c
 * compiles with the host C compiler alone.
 *
 * Functions that can fail return 0 on success; on failure they return a
 * non-zero code and write a NUL-terminated message into err[0..errlen).
 */
#ifndef NVSHMEM_HELLO_NVSHMEM_EXT_H
#define NVSHMEM_HELLO_NVSHMEM_EXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the loaded NVSHMEM library (its host library
 * libnvshmem_host.so), e.g. 3.4.5. Needs neither a GPU nor nh_init(). */
void nh_library_version(int *major, int *minor, int *patch);

/* Version of the NVSHMEM headers this module was compiled with. */
void nh_header_version(int *major, int *minor, int *patch);

/* Non-zero once nh_init() has succeeded (and nh_finalize() not run). */
int nh_is_initialized(void);

/* Initialise NVSHMEM (nvshmem_init), idempotent, and bind this PE to a
 * GPU of its node. Fails cleanly when there is no usable CUDA device;
 * note that NVSHMEM itself ends the process if its bootstrap fails. */
int nh_init(char *err, size_t errlen);

/* Finalise NVSHMEM (nvshmem_finalize) if it was initialised. */
void nh_finalize(void);

/* This PE's number and the number of PEs (nvshmem_my_pe/nvshmem_n_pes);
 * only valid after nh_init(). */
int nh_my_pe(void);
int nh_n_pes(void);

/* Ring exchange on the GPU: a kernel on every PE reads its PE number on
 * the device (nvshmem_my_pe) and writes it into a symmetric int on the
 * next PE (nvshmem_int_p); after a barrier, *received holds the number of
 * the previous PE, (my_pe - 1) mod n_pes. Collective: every PE must call
 * it. Needs nh_init(). */
int nh_ring_exchange(int *received, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* NVSHMEM_HELLO_NVSHMEM_EXT_H */
