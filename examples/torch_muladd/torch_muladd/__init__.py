"""A fused multiply-add operator for PyTorch: a cudawheel example.

``muladd(a, b, c)`` returns ``a * b + c`` (float32 tensors of one shape, ``c`` a number), on
the CPU or on a CUDA device, with autograd and ``torch.compile`` support (``ops.py``).
"""

# cudawheel generates _cuda_libs.py in the wheel: for a torch extension it imports torch first
# (torch loads its own CUDA libraries), then checks the driver and loads what torch did not.
from . import _cuda_libs

_cuda_libs.preload()

from . import _C  # noqa: E402,F401  (loading the library registers the operators)
from .ops import muladd  # noqa: E402

__all__ = ["muladd"]
