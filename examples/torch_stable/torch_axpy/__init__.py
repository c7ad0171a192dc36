"""alpha * x + y for PyTorch on its stable ABI: a cudawheel example.

``axpy(x, y, alpha)`` returns ``alpha * x + y`` (float32 tensors of one shape), on the CPU or
on a CUDA device; one wheel serves torch 2.10 and every later release.
"""

# cudawheel generates _cuda_libs.py in the wheel: for a torch extension it imports torch first
# (torch loads its own CUDA libraries), then checks the driver and loads what torch did not.
from . import _cuda_libs

_cuda_libs.preload()

from . import _C  # noqa: E402,F401  (loading the library registers the operator)
from .ops import axpy  # noqa: E402

__all__ = ["axpy"]
