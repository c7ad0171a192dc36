"""SAXPY on the GPU: a minimal cudawheel example.

``saxpy(a, x, y)`` returns ``[a * xi + yi for xi, yi in zip(x, y)]`` computed
by a CUDA kernel (in single precision).
"""

from ._core import saxpy, device_count, runtime_version, driver_version

__all__ = ["saxpy", "device_count", "runtime_version", "driver_version"]
