# GPU part `torch_stable` (`torch-stable-abi`). The GPU machine has no torch and no internet,
# and torch with its CUDA wheels (several GB) cannot be carried. So this part proves the CUDA
# kernel of examples/torch_stable itself: csrc/axpy_kernels.cu (the file the stable-ABI
# extension compiles and launches on torch's current stream) with a plain C++ harness, against
# a CPU reference.
#
#   prepare_torch_stable: builds the harness here with nvcc 13 from the project's installer,
#                         the nvcc flags cudawheel gives stable-ABI targets (C++20, USE_CUDA,
#                         relaxed constexpr), sm_90 SASS + PTX, the CUDA runtime, libstdc++
#                         and libgcc linked statically (needs only glibc and the driver
#                         there); carries the executable and the sources (a few hundred kB).
#   device_torch_stable:  runs the carried executable, then builds the same sources with the
#                         machine's own /usr/local/cuda nvcc and runs that too. Each prints
#                         "torch_stable kernel OK" or exits non-zero.

TORCH_STABLE_NVCC_FLAGS=(-std=c++20 -O3 -DUSE_CUDA --expt-relaxed-constexpr
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -cudart static)

prepare_torch_stable() {
  harness_prepare torch_stable axpy_harness TORCH_STABLE_NVCC_FLAGS examples/torch_stable/csrc/axpy_kernels.cu \
    examples/torch_stable/csrc/axpy_kernels.cuh scripts/gpu-checks/torch_stable_harness.cu
}

device_torch_stable() {
  harness_device torch_stable axpy_harness TORCH_STABLE_NVCC_FLAGS
}
