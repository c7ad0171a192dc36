"""A CUDA shared library shipped inside the wheel: a cudawheel example.

``libcalc.so`` (installed in ``shared_calc/lib/``) is a plain C library with
a CUDA reduction in it; the extension ``shared_calc._ext`` links it and finds
it at run time through its ``$ORIGIN``-relative RPATH.

``square_sum(x)`` returns ``sum(v * v for v in x)`` computed on the GPU.
"""

# cudawheel generates _cuda_libs.py in the wheel: it checks the CUDA driver and loads the
# NVIDIA libraries even where the extension's $ORIGIN RPATH cannot reach them.
from . import _cuda_libs

_cuda_libs.preload()

from ._ext import device_count, driver_version, runtime_version, square_sum

__all__ = ["device_count", "driver_version", "runtime_version", "square_sum"]
