"""Half-precision AXPY: host code (module.cpp) and kernels (haxpy.cu) both include the CUDA
runtime and cuda_fp16.h, so both must see the same CUDA headers."""

from ._core import cpp_cudart_version, cu_cudart_version, haxpy, runtime_version

__all__ = ["cpp_cudart_version", "cu_cudart_version", "haxpy", "runtime_version"]
