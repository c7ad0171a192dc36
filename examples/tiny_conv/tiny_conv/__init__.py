"""A causal depthwise conv1d for PyTorch: a cudawheel example shaped like a setup.py project.

The compiled operators live in the top-level module ``tiny_conv_cuda`` (as setup.py's
``CUDAExtension("tiny_conv_cuda", ...)`` builds it); this package is the Python API.
"""

__version__ = "0.3.0"

from .interface import causal_conv1d  # noqa: E402

__all__ = ["causal_conv1d", "__version__"]
