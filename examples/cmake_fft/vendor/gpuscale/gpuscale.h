#ifndef GPUSCALE_H
#define GPUSCALE_H
#ifdef __cplusplus
extern "C" {
#endif
/* cuFFT's version (cufftGetVersion: no GPU needed). */
int gpuscale_cufft_version(void);
/* Forward FFT of n real samples x on the GPU; writes |X[1]| to *out. 0 on success, else a
 * CUDA or cuFFT error code. */
int gpuscale_fft_bin1(const double *x, int n, double *out);
/* Scales n floats by a on the GPU (a kernel of this library). */
int gpuscale_scale(float *x, int n, float a);
#ifdef __cplusplus
}
#endif
#endif
