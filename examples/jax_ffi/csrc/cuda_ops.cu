// The CUDA handlers of square_add: a plain shared library (libjax_ffi_cuda.so, not a Python
// module) that Python opens with ctypes (`_cuda_libs.load("jax_ffi_cuda")`) and registers with
// `jax.ffi.register_ffi_target(..., platform="CUDA")`. It links libcudart by SONAME and finds
// it through its $ORIGIN RPATH in NVIDIA's runtime wheel: the same libcudart JAX's CUDA plugin
// loads from that wheel.
#include <cstdint>

#include <cuda_runtime.h>

#include "square_add.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void square_add_kernel(const float* x, const float* y, float a, float* out, int64_t n) {
  const int64_t stride = (int64_t)blockDim.x * gridDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * x[i] * x[i] + y[i];
  }
}

__global__ void square_add_grad_kernel(const float* g, const float* x, float a, float* gx,
                                       int64_t n) {
  const int64_t stride = (int64_t)blockDim.x * gridDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    gx[i] = 2.0f * a * x[i] * g[i];
  }
}

static unsigned blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return (unsigned)(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

extern "C" int jax_ffi_square_add_f32(const float* x, const float* y, float a, float* out,
                                      int64_t n, void* stream) {
  square_add_kernel<<<blocks(n), 256, 0, (cudaStream_t)stream>>>(x, y, a, out, n);
  return (int)cudaGetLastError();
}

extern "C" int jax_ffi_square_add_grad_f32(const float* g, const float* x, float a, float* gx,
                                           int64_t n, void* stream) {
  square_add_grad_kernel<<<blocks(n), 256, 0, (cudaStream_t)stream>>>(g, x, a, gx, n);
  return (int)cudaGetLastError();
}

static ffi::Error status(int err) {
  if (err != 0) return ffi::Error::Internal(cudaGetErrorString((cudaError_t)err));
  return ffi::Error::Success();
}

static ffi::Error SquareAddImpl(cudaStream_t stream, float a, ffi::Buffer<ffi::F32> x,
                                ffi::Buffer<ffi::F32> y, ffi::ResultBuffer<ffi::F32> out) {
  if (x.element_count() != y.element_count()) {
    return ffi::Error::InvalidArgument("square_add: x and y differ in size");
  }
  return status(jax_ffi_square_add_f32(x.typed_data(), y.typed_data(), a, out->typed_data(),
                                       (int64_t)x.element_count(), stream));
}

static ffi::Error SquareAddGradImpl(cudaStream_t stream, float a, ffi::Buffer<ffi::F32> g,
                                    ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> gx) {
  if (g.element_count() != x.element_count()) {
    return ffi::Error::InvalidArgument("square_add_grad: g and x differ in size");
  }
  return status(jax_ffi_square_add_grad_f32(g.typed_data(), x.typed_data(), a, gx->typed_data(),
                                            (int64_t)x.element_count(), stream));
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SquareAddCuda, SquareAddImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<float>("a")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SquareAddGradCuda, SquareAddGradImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Attr<float>("a")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
