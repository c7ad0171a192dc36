#include <cuda_runtime.h>

extern __device__ float scale_add(float a, float x, float y);

__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale_add(a, x[i], y[i]);
}

// y = a*x + y on the GPU; returns the CUDA error code (0 on success).
extern "C" int wrap_lto_saxpy(int n, float a, const float *x, float *y) {
  float *dx = nullptr, *dy = nullptr;
  size_t bytes = sizeof(float) * (size_t)n;
  cudaError_t err = cudaMalloc(&dx, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&dy, bytes);
  if (err == cudaSuccess) err = cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, dx, dy);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  return (int)err;
}

extern "C" int wrap_lto_runtime_version(void) {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}
