"""An own CUDA kernel followed by a cuBLAS call: a cudawheel example.

``axpy_dot(a, x, y)`` returns ``(out, dot)`` where ``out[i] = a * x[i] + y[i]``
is computed by a CUDA kernel and ``dot = sum(out[i] * x[i])`` by cuBLAS
(``cublasSdot``), both in single precision.
"""

# cudawheel generates _cuda_libs.py in the wheel: it checks the CUDA driver and loads the
# NVIDIA libraries even where the extension's $ORIGIN RPATH cannot reach them.
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
