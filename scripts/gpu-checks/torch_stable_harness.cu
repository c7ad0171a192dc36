// GPU check of examples/torch_stable's CUDA kernel without torch (the GPU machine has none):
// runs axpy_f32 from csrc/axpy_kernels.cu, the very file the stable-ABI extension compiles and
// calls on torch's current stream, on a stream of its own and on the legacy default stream,
// and compares with a CPU reference. Exit status 0 only when every value matches.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "axpy_kernels.cuh"

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "torch_stable kernel FAILED: %s: %s\n", #call,              \
                   cudaGetErrorString(err_));                                          \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

static float next_value(unsigned long long* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*state >> 40) & 0xFFFFFF) / (float)0x1000000 * 200.0f - 100.0f;
}

static int run(long long n, float alpha, bool own_stream) {
  std::vector<float> x(n), y(n), out(n);
  unsigned long long state = 7 + n;
  for (long long i = 0; i < n; ++i) {
    x[i] = next_value(&state);
    y[i] = next_value(&state);
  }
  const size_t bytes = (size_t)n * sizeof(float) + 4;
  float *dx, *dy, *dout;
  CHECK(cudaMalloc(&dx, bytes));
  CHECK(cudaMalloc(&dy, bytes));
  CHECK(cudaMalloc(&dout, bytes));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream = nullptr;
  if (own_stream) CHECK(cudaStreamCreate(&stream));
  CHECK(axpy_f32(dx, dy, alpha, dout, n, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (long long i = 0; i < n; ++i) {
    const float want = std::fmaf(alpha, x[i], y[i]);
    if (std::fabs(out[i] - want) > 1e-4f * (1.0f + std::fabs(want))) {
      if (bad++ < 5) std::fprintf(stderr, "n=%lld i=%lld: got %g, want %g\n", n, i, out[i], want);
    }
  }
  if (own_stream) CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dout));
  return bad;
}

int main() {
  int bad = 0;
  // Empty, one partial block, several blocks, more elements than the grid (grid-stride loop).
  const long long sizes[] = {0, 1, 255, 4097, 70000000};
  for (long long n : sizes) {
    bad += run(n, 0.5f, true);
    bad += run(n, -2.25f, false);
  }
  if (bad) {
    std::fprintf(stderr, "torch_stable kernel FAILED: %d mismatches\n", bad);
    return 1;
  }
  std::printf("torch_stable kernel OK\n");
  return 0;
}
