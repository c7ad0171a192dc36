// Runs examples/tiny_conv's kernel (tiny_conv_causal_conv1d_fwd_f32, the C interface the
// torch extension calls) against a CPU reference. Prints "tiny_conv kernel OK" or exits 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "causal_conv1d.h"

int main() {
  const int batch = 3, dim = 5, seqlen = 1000, width = 4;
  const size_t n = static_cast<size_t>(batch) * dim * seqlen;
  std::vector<float> x(n), w(dim * width), out(n), ref(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.37f * i);
  for (int i = 0; i < dim * width; ++i) w[i] = 0.25f * (i % 7) - 0.5f;
  for (size_t i = 0; i < n; ++i) {
    const int t = i % seqlen, d = (i / seqlen) % dim;
    float acc = 0.f;
    for (int k = 0; k < width; ++k) {
      const int s = t - (width - 1) + k;
      if (s >= 0) acc += w[d * width + k] * x[i - t + s];
    }
    ref[i] = acc;
  }
  float *dx, *dw, *dout;
  if (cudaMalloc(&dx, n * 4) || cudaMalloc(&dw, w.size() * 4) || cudaMalloc(&dout, n * 4)) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
  int err = tiny_conv_causal_conv1d_fwd_f32(dx, dw, dout, batch, dim, seqlen, width, nullptr);
  if (err || cudaDeviceSynchronize()) {
    std::printf("launch failed: %s\n", tiny_conv_error_string(err));
    return 1;
  }
  cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(out[i] - ref[i]));
  std::printf("tiny_conv kernel: max abs error %.3g over %zu outputs\n", worst, n);
  if (worst > 1e-4) return 1;
  std::printf("tiny_conv kernel OK\n");
  return 0;
}
