// The CUDA implementations of torch_muladd's operators, registered for the CUDA dispatch key.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "muladd_kernels.cuh"

namespace torch_muladd {

namespace {

void check_inputs(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "muladd: a and b must have the same shape");
  TORCH_CHECK(a.dtype() == at::kFloat && b.dtype() == at::kFloat, "muladd: float32 tensors only");
  TORCH_INTERNAL_ASSERT(a.device().type() == at::DeviceType::CUDA);
  TORCH_INTERNAL_ASSERT(b.device().type() == at::DeviceType::CUDA);
}

void check(cudaError_t err) {
  TORCH_CHECK(err == cudaSuccess, "muladd: CUDA kernel launch failed: ", cudaGetErrorString(err));
}

}  // namespace

at::Tensor muladd_cuda(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs(a, b);
  const c10::cuda::CUDAGuard guard(a.device());
  const at::Tensor ac = a.contiguous();
  const at::Tensor bc = b.contiguous();
  at::Tensor out = at::empty(ac.sizes(), ac.options());
  check(muladd_forward_f32(ac.data_ptr<float>(), bc.data_ptr<float>(), static_cast<float>(c),
                           out.data_ptr<float>(), ac.numel(),
                           c10::cuda::getCurrentCUDAStream()));
  return out;
}

std::tuple<at::Tensor, at::Tensor> muladd_backward_cuda(const at::Tensor& grad,
                                                        const at::Tensor& a,
                                                        const at::Tensor& b) {
  check_inputs(a, b);
  TORCH_CHECK(grad.sizes() == a.sizes(), "muladd_backward: grad must have the shape of a");
  const c10::cuda::CUDAGuard guard(a.device());
  const at::Tensor gc = grad.contiguous();
  const at::Tensor ac = a.contiguous();
  const at::Tensor bc = b.contiguous();
  at::Tensor grad_a = at::empty(ac.sizes(), ac.options());
  at::Tensor grad_b = at::empty(ac.sizes(), ac.options());
  check(muladd_backward_f32(gc.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(),
                            grad_a.data_ptr<float>(), grad_b.data_ptr<float>(), ac.numel(),
                            c10::cuda::getCurrentCUDAStream()));
  return {grad_a, grad_b};
}

TORCH_LIBRARY_IMPL(torch_muladd, CUDA, m) {
  m.impl("muladd", &muladd_cuda);
  m.impl("muladd_backward", &muladd_backward_cuda);
}

}  // namespace torch_muladd
