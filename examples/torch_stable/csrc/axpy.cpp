// torch_axpy's operator schema and CPU kernel, plus the module stub that lets Python load this
// library (`import torch_axpy._C` runs the registrations below). Only PyTorch's stable ABI is
// used: torch/csrc/stable (header-only wrappers over the C shims) and torch/headeronly.
#include <Python.h>

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

// The module holds no functions: the operator lives in torch's dispatcher. Only the limited
// C API is used, so one abi3 wheel serves every CPython the torch floor supports.
extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module = {
      PyModuleDef_HEAD_INIT,
      "_C",
      "torch_axpy's operators (registered with torch's dispatcher on import)",
      -1,
      nullptr,
  };
  return PyModule_Create(&module);
}

namespace {

using torch::stable::Tensor;

Tensor axpy_cpu(Tensor x, Tensor y, double alpha) {
  STD_TORCH_CHECK(x.dim() == y.dim() && x.numel() == y.numel(),
                  "axpy: x and y must have the same shape");
  STD_TORCH_CHECK(x.scalar_type() == torch::headeronly::ScalarType::Float &&
                      y.scalar_type() == torch::headeronly::ScalarType::Float,
                  "axpy: float32 tensors only");
  STD_TORCH_CHECK(x.is_cpu() && y.is_cpu(), "axpy: CPU tensors expected");
  const Tensor xc = torch::stable::contiguous(x);
  const Tensor yc = torch::stable::contiguous(y);
  Tensor out = torch::stable::empty_like(xc);
  const float* px = static_cast<const float*>(xc.data_ptr());
  const float* py = static_cast<const float*>(yc.data_ptr());
  float* po = static_cast<float*>(out.data_ptr());
  const float a = static_cast<float>(alpha);
  for (int64_t i = 0; i < xc.numel(); ++i) {
    po[i] = a * px[i] + py[i];
  }
  return out;
}

}  // namespace

STABLE_TORCH_LIBRARY(torch_axpy, m) { m.def("axpy(Tensor x, Tensor y, float alpha) -> Tensor"); }

STABLE_TORCH_LIBRARY_IMPL(torch_axpy, CPU, m) { m.impl("axpy", TORCH_BOX(&axpy_cpu)); }
