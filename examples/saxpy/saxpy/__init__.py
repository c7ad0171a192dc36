"""SAXPY on the GPU: a minimal cudawheel example.

``saxpy(a, x, y)`` returns ``[a * xi + yi for xi, yi in zip(x, y)]`` computed
by a CUDA kernel (in single precision).
"""

# cudawheel generates _cuda_libs.py in the wheel: it checks the CUDA driver and loads the
# NVIDIA libraries even where the extension's $ORIGIN RPATH cannot reach them.
from . import _cuda_libs

_cuda_libs.preload()

from ._core import saxpy, runtime_version, driver_version
from ._core import device_count as _device_count


def device_count():
    """The CUDA devices this process sees. Without an NVIDIA driver CUDA itself reports
    "driver version is insufficient", which reads like an outdated driver: say it as it is."""
    if driver_version() == 0:
        raise RuntimeError("no NVIDIA driver: libcuda.so.1 cannot be loaded, so the GPU code cannot run here")
    return _device_count()


__all__ = ["saxpy", "device_count", "runtime_version", "driver_version"]
