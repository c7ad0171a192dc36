// torch_axpy's CUDA kernel registered for the CUDA dispatch key, on PyTorch's stable ABI: the
// device is set with the stable DeviceGuard and the kernel runs on torch's current stream
// (from the C shim: USE_CUDA declares it).
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>
#include <torch/headeronly/util/shim_utils.h>

#include "axpy_kernels.cuh"

namespace {

using torch::stable::Tensor;

Tensor axpy_cuda(Tensor x, Tensor y, double alpha) {
  STD_TORCH_CHECK(x.dim() == y.dim() && x.numel() == y.numel(),
                  "axpy: x and y must have the same shape");
  STD_TORCH_CHECK(x.scalar_type() == torch::headeronly::ScalarType::Float &&
                      y.scalar_type() == torch::headeronly::ScalarType::Float,
                  "axpy: float32 tensors only");
  STD_TORCH_CHECK(x.is_cuda() && y.is_cuda(), "axpy: CUDA tensors expected");
  const int32_t device = x.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(device);
  const Tensor xc = torch::stable::contiguous(x);
  const Tensor yc = torch::stable::contiguous(y);
  Tensor out = torch::stable::empty_like(xc);
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  const cudaError_t err = axpy_f32(static_cast<const float*>(xc.data_ptr()),
                                   static_cast<const float*>(yc.data_ptr()),
                                   static_cast<float>(alpha), static_cast<float*>(out.data_ptr()),
                                   xc.numel(), static_cast<cudaStream_t>(stream));
  STD_TORCH_CHECK(err == cudaSuccess, "axpy: CUDA kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(torch_axpy, CUDA, m) { m.impl("axpy", TORCH_BOX(&axpy_cuda)); }
