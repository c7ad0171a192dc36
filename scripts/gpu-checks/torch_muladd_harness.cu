// GPU check of examples/torch_muladd's CUDA kernels without torch (the GPU machine has none):
// runs muladd_forward_f32 / muladd_backward_f32 from csrc/muladd_kernels.cu, the very file the
// torch extension compiles, and compares with a CPU reference. Exit status 0 only when every
// value matches.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "muladd_kernels.cuh"

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "torch_muladd kernels FAILED: %s: %s\n", #call,              \
                   cudaGetErrorString(err_));                                           \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

static float next_value(unsigned long long* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*state >> 40) & 0xFFFFFF) / (float)0x1000000 * 200.0f - 100.0f;
}

static int run(long long n, float c) {
  std::vector<float> a(n), b(n), g(n), out(n), ga(n), gb(n);
  unsigned long long state = 42 + n;
  for (long long i = 0; i < n; ++i) {
    a[i] = next_value(&state);
    b[i] = next_value(&state);
    g[i] = next_value(&state);
  }
  const size_t bytes = (size_t)n * sizeof(float) + 4;
  float *da, *db, *dg, *dout, *dga, *dgb;
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMalloc(&dg, bytes));
  CHECK(cudaMalloc(&dout, bytes));
  CHECK(cudaMalloc(&dga, bytes));
  CHECK(cudaMalloc(&dgb, bytes));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dg, g.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(muladd_forward_f32(da, db, c, dout, n, stream));
  CHECK(muladd_backward_f32(dg, da, db, dga, dgb, n, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ga.data(), dga, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(gb.data(), dgb, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  double max_err = 0.0;
  for (long long i = 0; i < n; ++i) {
    const float ref = std::fmaf(a[i], b[i], c);  // the kernel's single rounding
    const double err = std::fabs((double)out[i] - (double)ref);
    max_err = err > max_err ? err : max_err;
    if (err > 1e-6 * std::fmax(1.0, std::fabs((double)ref)) || ga[i] != g[i] * b[i] ||
        gb[i] != g[i] * a[i]) {
      if (bad++ < 5) {
        std::fprintf(stderr, "mismatch at %lld: out %g (ref %g), grad_a %g (ref %g), grad_b %g (ref %g)\n",
                     i, out[i], ref, ga[i], g[i] * b[i], gb[i], g[i] * a[i]);
      }
    }
  }
  for (float* p : {da, db, dg, dout, dga, dgb}) CHECK(cudaFree(p));
  CHECK(cudaStreamDestroy(stream));
  std::printf("n=%lld c=%g: forward max_abs_err=%.3g, backward exact: %s\n", n, c, max_err,
              bad ? "NO" : "yes");
  return bad;
}

int main() {
  int device = 0, runtime = 0, driver = 0;
  CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, device));
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  std::printf("device %s (sm_%d%d), runtime %d, driver %d\n", prop.name, prop.major, prop.minor,
              runtime, driver);
  int bad = 0;
  for (long long n : {0LL, 1LL, 255LL, 1000003LL, 20000000LL}) bad += run(n, 0.5f);
  bad += run(4097, -3.25f);
  if (bad) {
    std::fprintf(stderr, "torch_muladd kernels FAILED: %d mismatches\n", bad);
    return 1;
  }
  std::printf("torch_muladd kernels OK\n");
  return 0;
}
