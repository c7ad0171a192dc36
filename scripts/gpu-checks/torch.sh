# GPU part `torch` (bindings = "torch"). The GPU machine has no torch and no internet,
# and torch with its CUDA wheels (several GB) cannot be carried. So this part proves the
# example's CUDA kernels themselves: examples/torch_muladd/csrc/muladd_kernels.cu (the file
# the torch extension compiles and calls) with a plain C++ harness, against a CPU reference.
#
#   prepare_torch: builds the harness here with nvcc 13 from the project's installer, the
#                  nvcc flags torch's extension builder uses, sm_90 SASS + PTX, the CUDA
#                  runtime linked statically (needs only the driver there); carries the
#                  executable and the sources (a few hundred kB).
#   device_torch:  runs the carried executable, then builds the same sources with the
#                  machine's own /usr/local/cuda nvcc and runs that too. Each prints
#                  "torch_muladd kernels OK" or exits non-zero.

TORCH_NVCC_FLAGS=(-std=c++20 -O3 -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -cudart static)

prepare_torch() {
  harness_prepare torch muladd_harness TORCH_NVCC_FLAGS examples/torch_muladd/csrc/muladd_kernels.cu \
    examples/torch_muladd/csrc/muladd_kernels.cuh scripts/gpu-checks/torch_muladd_harness.cu
}

device_torch() {
  harness_device torch muladd_harness TORCH_NVCC_FLAGS
}
