#include <cuda_runtime.h>
#include <thrust/tuple.h>

// CCCL 2 (CUDA 12) spelling: thrust::tuple with thrust::get, as code written for CUDA 12 has it.
__global__ void scale_kernel(int n, float a, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  thrust::tuple<float, float> t(a, i < n ? y[i] : 0.f);
  if (i < n) y[i] = thrust::get<0>(t) * thrust::get<1>(t);
}

// y *= a on the GPU; returns the CUDA error code (0 on success).
extern "C" int wrap_cuda12_scale(int n, float a, float *host) {
  float *y = nullptr;
  cudaError_t err = cudaMalloc(&y, sizeof(float) * n);
  if (err == cudaSuccess) err = cudaMemcpy(y, host, sizeof(float) * n, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    scale_kernel<<<(n + 255) / 256, 256>>>(n, a, y);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpy(host, y, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaFree(y);
  return (int)err;
}

extern "C" int wrap_cuda12_runtime_version(void) {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}
