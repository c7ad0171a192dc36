"""A CMake project written for CUDA 12, wrapped: `_k` scales a list on the GPU."""
