// tiny_conv's operator: schema, CPU kernel, the CUDA kernel's registration, and the module
// stub that makes `import tiny_conv_cuda` load this library (the operators live in torch's
// dispatcher: torch.ops.tiny_conv.causal_conv1d).
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "causal_conv1d.h"

extern "C" PyMODINIT_FUNC PyInit_tiny_conv_cuda(void) {
  static struct PyModuleDef module = {
      PyModuleDef_HEAD_INIT, "tiny_conv_cuda",
      "tiny_conv's operators (registered with torch.library on import)", -1, nullptr,
  };
  return PyModule_Create(&module);
}

namespace tiny_conv {

namespace {

void check_inputs(const at::Tensor& x, const at::Tensor& weight) {
  TORCH_CHECK(x.dim() == 3, "causal_conv1d: x must be (batch, dim, seqlen)");
  TORCH_CHECK(weight.dim() == 2 && weight.size(0) == x.size(1),
              "causal_conv1d: weight must be (dim, width)");
  TORCH_CHECK(x.dtype() == at::kFloat && weight.dtype() == at::kFloat,
              "causal_conv1d: float32 tensors only");
}

}  // namespace

at::Tensor causal_conv1d_cpu(const at::Tensor& x, const at::Tensor& weight) {
  check_inputs(x, weight);
  const at::Tensor xc = x.contiguous();
  const at::Tensor wc = weight.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options());
  const float* xp = xc.data_ptr<float>();
  const float* wp = wc.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t dim = xc.size(1), seqlen = xc.size(2), width = wc.size(1);
  for (int64_t i = 0; i < xc.numel(); ++i) {
    const int64_t t = i % seqlen, d = (i / seqlen) % dim;
    float acc = 0.f;
    for (int64_t k = 0; k < width; ++k) {
      const int64_t s = t - (width - 1) + k;
      if (s >= 0) acc += wp[d * width + k] * xp[i - t + s];
    }
    op[i] = acc;
  }
  return out;
}

at::Tensor causal_conv1d_cuda(const at::Tensor& x, const at::Tensor& weight) {
  check_inputs(x, weight);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  const at::Tensor wc = weight.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options());
  const int err = tiny_conv_causal_conv1d_fwd_f32(
      xc.data_ptr<float>(), wc.data_ptr<float>(), out.data_ptr<float>(),
      static_cast<int>(xc.size(0)), static_cast<int>(xc.size(1)), static_cast<int>(xc.size(2)),
      static_cast<int>(wc.size(1)), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == 0, "causal_conv1d: CUDA kernel launch failed: ", tiny_conv_error_string(err));
  return out;
}

TORCH_LIBRARY(tiny_conv, m) { m.def("causal_conv1d(Tensor x, Tensor weight) -> Tensor"); }

TORCH_LIBRARY_IMPL(tiny_conv, CPU, m) { m.impl("causal_conv1d", &causal_conv1d_cpu); }

TORCH_LIBRARY_IMPL(tiny_conv, CUDA, m) { m.impl("causal_conv1d", &causal_conv1d_cuda); }

}  // namespace tiny_conv
