// The CPU handlers of square_add, as XLA FFI handlers (xla/ffi/api/ffi.h from
// jax.ffi.include_dir(), put on the include path by `bindings = "jax"`), handed to JAX as
// PyCapsules by a nanobind module.
#include <cstdint>

#include <nanobind/nanobind.h>

#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;

static ffi::Error SquareAddImpl(float a, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y,
                                ffi::ResultBuffer<ffi::F32> out) {
  const size_t n = x.element_count();
  if (y.element_count() != n) {
    return ffi::Error::InvalidArgument("square_add: x and y differ in size");
  }
  const float* xs = x.typed_data();
  const float* ys = y.typed_data();
  float* o = out->typed_data();
  for (size_t i = 0; i < n; ++i) o[i] = a * xs[i] * xs[i] + ys[i];
  return ffi::Error::Success();
}

static ffi::Error SquareAddGradImpl(float a, ffi::Buffer<ffi::F32> g, ffi::Buffer<ffi::F32> x,
                                    ffi::ResultBuffer<ffi::F32> gx) {
  const size_t n = x.element_count();
  if (g.element_count() != n) {
    return ffi::Error::InvalidArgument("square_add_grad: g and x differ in size");
  }
  const float* gs = g.typed_data();
  const float* xs = x.typed_data();
  float* o = gx->typed_data();
  for (size_t i = 0; i < n; ++i) o[i] = 2.0f * a * xs[i] * gs[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SquareAddCpu, SquareAddImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("a")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SquareAddGradCpu, SquareAddGradImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("a")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

template <typename T>
static nb::capsule capsule(T* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn));
}

NB_MODULE(_cpu, m) {
  m.def("registrations", []() {
    nb::dict d;
    d["jax_ffi_square_add"] = capsule(SquareAddCpu);
    d["jax_ffi_square_add_grad"] = capsule(SquareAddGradCpu);
    return d;
  });
  m.attr("XLA_FFI_API_MAJOR") = XLA_FFI_API_MAJOR;
  m.attr("XLA_FFI_API_MINOR") = XLA_FFI_API_MINOR;
}
