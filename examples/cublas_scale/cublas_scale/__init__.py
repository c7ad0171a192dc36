"""An own CUDA kernel followed by a cuBLAS call: a cudawheel example.

``axpy_dot(a, x, y)`` returns ``(out, dot)`` where ``out[i] = a * x[i] + y[i]``
is computed by a CUDA kernel and ``dot = sum(out[i] * x[i])`` by cuBLAS
(``cublasSdot``), both in single precision.
"""

from importlib.util import find_spec as _find_spec

# A wheel built by cudawheel carries the generated helper _cuda_libs.py: it
# locates the NVIDIA libraries (libcudart, libcublas) on sys.path when the
# extension's RPATH alone cannot find them. Built some other way, there is
# none and the RPATH/system loader has to do.
if _find_spec(__name__ + "._cuda_libs") is not None:
    from . import _cuda_libs

    _cuda_libs.preload()

from ._core import (
    axpy_dot,
    cublas_version,
    device_count,
    driver_version,
    runtime_version,
)

__all__ = [
    "axpy_dot",
    "cublas_version",
    "device_count",
    "driver_version",
    "runtime_version",
]
