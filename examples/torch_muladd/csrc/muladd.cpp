// torch_muladd's operator schemas and CPU kernels, plus the module stub that lets Python load
// this library (`import torch_muladd._C` runs the registrations below).
#include <Python.h>

// The lightest headers that do the job (torch/all.h or torch/extension.h would triple the
// compile time).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

// The module holds no functions: the operators live in torch's dispatcher. Only the limited
// C API is used here, so one abi3 wheel serves every CPython from 3.10 on.
extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module = {
      PyModuleDef_HEAD_INIT,
      "_C",
      "torch_muladd's operators (registered with torch.library on import)",
      -1,
      nullptr,
  };
  return PyModule_Create(&module);
}

namespace torch_muladd {

namespace {

void check_inputs(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "muladd: a and b must have the same shape");
  TORCH_CHECK(a.dtype() == at::kFloat && b.dtype() == at::kFloat, "muladd: float32 tensors only");
  TORCH_INTERNAL_ASSERT(a.device().type() == at::DeviceType::CPU);
  TORCH_INTERNAL_ASSERT(b.device().type() == at::DeviceType::CPU);
}

}  // namespace

at::Tensor muladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs(a, b);
  const at::Tensor ac = a.contiguous();
  const at::Tensor bc = b.contiguous();
  at::Tensor out = at::empty(ac.sizes(), ac.options());
  const float* pa = ac.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const float cf = static_cast<float>(c);
  for (int64_t i = 0; i < ac.numel(); ++i) {
    po[i] = pa[i] * pb[i] + cf;
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor> muladd_backward_cpu(const at::Tensor& grad,
                                                       const at::Tensor& a, const at::Tensor& b) {
  check_inputs(a, b);
  TORCH_CHECK(grad.sizes() == a.sizes(), "muladd_backward: grad must have the shape of a");
  const at::Tensor gc = grad.contiguous();
  const at::Tensor ac = a.contiguous();
  const at::Tensor bc = b.contiguous();
  at::Tensor grad_a = at::empty(ac.sizes(), ac.options());
  at::Tensor grad_b = at::empty(ac.sizes(), ac.options());
  const float* pg = gc.data_ptr<float>();
  const float* pa = ac.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* pga = grad_a.data_ptr<float>();
  float* pgb = grad_b.data_ptr<float>();
  for (int64_t i = 0; i < ac.numel(); ++i) {
    pga[i] = pg[i] * pb[i];
    pgb[i] = pg[i] * pa[i];
  }
  return {grad_a, grad_b};
}

// The schemas: torch.ops.torch_muladd.muladd / .muladd_backward.
TORCH_LIBRARY(torch_muladd, m) {
  m.def("muladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("muladd_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(torch_muladd, CPU, m) {
  m.impl("muladd", &muladd_cpu);
  m.impl("muladd_backward", &muladd_backward_cpu);
}

}  // namespace torch_muladd
