/* GPU check of examples/jax_ffi's CUDA handlers without JAX (the GPU machine has no jax).
 *
 * Opens the shared library exactly as the package does (dlopen of
 * <site>/jax_ffi_example/lib/libjax_ffi_cuda.so, as ctypes.CDLL does), so libcudart.so.13 is
 * found through the library's own $ORIGIN RPATH in NVIDIA's runtime wheel. Every CUDA runtime
 * call of this harness goes through that same libcudart (dlsym on the library's handle): one
 * runtime in the process, checked in /proc/self/maps. Then runs the kernels the XLA FFI
 * handlers launch (jax_ffi_square_add_f32 / _grad_f32) and compares with a CPU reference.
 *
 *   jax_ffi_harness LIB [--load-only]
 *
 * --load-only: no GPU needed: the library loads, its FFI handler symbols and launchers are
 * there, and exactly one libcudart is mapped, from the runtime wheel. Exit status 0 only when
 * every check passes. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*launch_fn)(const float*, const float*, float, float*, int64_t, void*);
typedef int (*malloc_fn)(void**, size_t);
typedef int (*free_fn)(void*);
typedef int (*memcpy_fn)(void*, const void*, size_t, int);
typedef int (*sync_fn)(void);
typedef const char* (*errstr_fn)(int);

static void* lib;

static void* sym(const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "jax_ffi handlers FAILED: no symbol %s: %s\n", name, dlerror());
    exit(1);
  }
  return p;
}

/* The distinct libcudart files mapped into this process; prints them. */
static int cudart_mappings(const char* want_dir) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[4096], seen[8][1024];
  int n = 0, bad = 0;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    char* path = strchr(line, '/');
    if (!path || !strstr(path, "libcudart")) continue;
    path[strcspn(path, "\n")] = 0;
    int dup = 0;
    for (int i = 0; i < n; ++i) dup |= strcmp(seen[i], path) == 0;
    if (dup || n == 8) continue;
    snprintf(seen[n++], sizeof seen[0], "%s", path);
    printf("mapped: %s\n", path);
    if (want_dir && !strstr(path, want_dir)) bad = 1;
  }
  fclose(f);
  return bad ? -n : n;
}

static float next_value(unsigned long long* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*s >> 40) & 0xFFFFFF) / (float)0x1000000 * 20.0f - 10.0f;
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    int e_ = (call);                                                                  \
    if (e_) {                                                                         \
      fprintf(stderr, "jax_ffi handlers FAILED: %s: %s\n", #call, errstr(e_));        \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static int run(int64_t n, float a) {
  malloc_fn cmalloc = (malloc_fn)sym("cudaMalloc");
  free_fn cfree = (free_fn)sym("cudaFree");
  memcpy_fn cmemcpy = (memcpy_fn)sym("cudaMemcpy");
  sync_fn csync = (sync_fn)sym("cudaDeviceSynchronize");
  errstr_fn errstr = (errstr_fn)sym("cudaGetErrorString");
  launch_fn fwd = (launch_fn)sym("jax_ffi_square_add_f32");
  launch_fn bwd = (launch_fn)sym("jax_ffi_square_add_grad_f32");
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *g = malloc(bytes), *out = malloc(bytes),
        *gx = malloc(bytes);
  unsigned long long s = 7 + (unsigned long long)n;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = next_value(&s);
    y[i] = next_value(&s);
    g[i] = next_value(&s);
  }
  void *dx, *dy, *dg, *dout, *dgx;
  CHECK(cmalloc(&dx, bytes + 4));
  CHECK(cmalloc(&dy, bytes + 4));
  CHECK(cmalloc(&dg, bytes + 4));
  CHECK(cmalloc(&dout, bytes + 4));
  CHECK(cmalloc(&dgx, bytes + 4));
  CHECK(cmemcpy(dx, x, bytes, 1));
  CHECK(cmemcpy(dy, y, bytes, 1));
  CHECK(cmemcpy(dg, g, bytes, 1));
  CHECK(fwd(dx, dy, a, dout, n, NULL));
  CHECK(bwd(dg, dx, a, dgx, n, NULL));
  CHECK(csync());
  CHECK(cmemcpy(out, dout, bytes, 2));
  CHECK(cmemcpy(gx, dgx, bytes, 2));
  int bad = 0;
  double max_err = 0;
  for (int64_t i = 0; i < n; ++i) {
    double ref = (double)a * x[i] * x[i] + y[i], gref = 2.0 * a * x[i] * g[i];
    double e = fabs(out[i] - ref) / fmax(1.0, fabs(ref));
    double eg = fabs(gx[i] - gref) / fmax(1.0, fabs(gref));
    e = e > eg ? e : eg;
    max_err = e > max_err ? e : max_err;
    if (e > 1e-5) bad++;
  }
  cfree(dx), cfree(dy), cfree(dg), cfree(dout), cfree(dgx);
  free(x), free(y), free(g), free(out), free(gx);
  printf("n=%lld a=%g: max relative error %.3g, %d mismatches\n", (long long)n, a, max_err, bad);
  return bad != 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIB [--load-only]\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "jax_ffi handlers FAILED: dlopen: %s\n", dlerror());
    return 1;
  }
  sym("SquareAddCuda");
  sym("SquareAddGradCuda");
  int maps = cudart_mappings("/nvidia/cu13/lib/");
  if (maps != 1) {
    fprintf(stderr, "jax_ffi handlers FAILED: expected one libcudart from nvidia/cu13/lib, got %d\n",
            maps);
    return 1;
  }
  if (argc > 2 && strcmp(argv[2], "--load-only") == 0) {
    printf("jax_ffi handlers load OK\n");
    return 0;
  }
  int fails = run(1, 2.0f) + run(1000, -0.5f) + run(1 << 20, 3.0f);
  if (cudart_mappings(NULL) != 1) fails++;
  if (fails) return 1;
  printf("jax_ffi handlers OK\n");
  return 0;
}
