"""A wrapped CMake project: `_gpu` (device LTO across two .cu files) and `_cpu` (no CUDA)."""
