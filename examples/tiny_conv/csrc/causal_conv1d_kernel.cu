// The CUDA kernel, behind a plain C interface: no torch headers here, so this file compiles
// in seconds (torch's headers would make it a minute).
#include <cuda_runtime.h>

#include "causal_conv1d.h"

namespace {

// out[b, d, t] = sum_k weight[d, k] * x[b, d, t - (width - 1) + k], zero before the start.
__global__ void causal_conv1d_fwd_kernel(const float* __restrict__ x,
                                         const float* __restrict__ weight,
                                         float* __restrict__ out, int dim, int seqlen,
                                         int width, long long total) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int t = static_cast<int>(i % seqlen);
  const int d = static_cast<int>((i / seqlen) % dim);
  const float* row = x + (i - t);
  float acc = 0.f;
  for (int k = 0; k < width; ++k) {
    const int s = t - (width - 1) + k;
    if (s >= 0) acc = fmaf(weight[d * width + k], row[s], acc);
  }
  out[i] = acc;
}

}  // namespace

extern "C" int tiny_conv_causal_conv1d_fwd_f32(const float* x, const float* weight, float* out,
                                               int batch, int dim, int seqlen, int width,
                                               void* stream) {
  const long long total = static_cast<long long>(batch) * dim * seqlen;
  if (total == 0) return 0;
  const int threads = 256;
  const int blocks = static_cast<int>((total + threads - 1) / threads);
  causal_conv1d_fwd_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, weight, out, dim, seqlen, width, total);
  return static_cast<int>(cudaGetLastError());
}

extern "C" const char* tiny_conv_error_string(int err) {
  return cudaGetErrorString(static_cast<cudaError_t>(err));
}
