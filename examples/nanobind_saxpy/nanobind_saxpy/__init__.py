"""SAXPY on the GPU with nanobind bindings: a cudawheel example.

``saxpy(a, x, y)`` returns ``[a * xi + yi for xi, yi in zip(x, y)]`` computed by a CUDA
kernel (in single precision).
"""

# cudawheel generates _cuda_libs.py in the wheel: it checks the CUDA driver and loads the
# NVIDIA libraries even where the extension's $ORIGIN RPATH cannot reach them.
from . import _cuda_libs

_cuda_libs.preload()

from ._core import saxpy, device_count, runtime_version, driver_version

__all__ = ["saxpy", "device_count", "runtime_version", "driver_version"]
