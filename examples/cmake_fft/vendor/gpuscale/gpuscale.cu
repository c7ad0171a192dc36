#include "gpuscale.h"

#include <cuda_runtime.h>
#include <cufft.h>
#include <math.h>

extern "C" int gpuscale_cufft_version(void)
{
    int v = 0;
    return cufftGetVersion(&v) == CUFFT_SUCCESS ? v : -1;
}

__global__ void scale_kernel(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

extern "C" int gpuscale_scale(float *x, int n, float a)
{
    float *d = nullptr;
    cudaError_t e = cudaMalloc(&d, n * sizeof(float));
    if (e != cudaSuccess)
        return (int)e;
    cudaMemcpy(d, x, n * sizeof(float), cudaMemcpyHostToDevice);
    scale_kernel<<<(n + 255) / 256, 256>>>(d, n, a);
    e = cudaMemcpy(x, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return (int)e;
}

extern "C" int gpuscale_fft_bin1(const double *x, int n, double *out)
{
    cufftDoubleReal *in = nullptr;
    cufftDoubleComplex *spec = nullptr;
    cudaError_t e = cudaMalloc(&in, n * sizeof(double));
    if (e != cudaSuccess)
        return (int)e;
    cudaMalloc(&spec, (n / 2 + 1) * sizeof(cufftDoubleComplex));
    cudaMemcpy(in, x, n * sizeof(double), cudaMemcpyHostToDevice);
    cufftHandle plan;
    int r = (int)cufftPlan1d(&plan, n, CUFFT_D2Z, 1);
    if (r == 0) {
        r = (int)cufftExecD2Z(plan, in, spec);
        cufftDestroy(plan);
    }
    cufftDoubleComplex h[2];
    if (r == 0)
        r = (int)cudaMemcpy(h, spec, sizeof h, cudaMemcpyDeviceToHost);
    *out = sqrt(h[1].x * h[1].x + h[1].y * h[1].y);
    cudaFree(in);
    cudaFree(spec);
    return r;
}
