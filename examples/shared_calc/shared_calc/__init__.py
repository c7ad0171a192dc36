"""A CUDA shared library shipped inside the wheel: a cudawheel example.

``libcalc.so`` (installed in ``shared_calc/lib/``) is a plain C library with
a CUDA reduction in it; the extension ``shared_calc._ext`` links it and finds
it at run time through its ``$ORIGIN``-relative RPATH.

``square_sum(x)`` returns ``sum(v * v for v in x)`` computed on the GPU.
"""

from importlib.util import find_spec as _find_spec

# A wheel built by cudawheel carries the generated helper _cuda_libs.py: it
# locates the NVIDIA libraries (libcudart) on sys.path when the RPATHs alone
# cannot find them. Built some other way, there is none and the
# RPATH/system loader has to do.
if _find_spec(__name__ + "._cuda_libs") is not None:
    from . import _cuda_libs

    _cuda_libs.preload()

from ._ext import device_count, driver_version, runtime_version, square_sum

__all__ = ["device_count", "driver_version", "runtime_version", "square_sum"]
