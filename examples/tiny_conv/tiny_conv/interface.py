"""The Python API over the operators that ``tiny_conv_cuda`` registers with torch."""

import torch

# cudawheel generates _tiny_conv_cuda_cuda_libs.py next to the top-level module: for a torch
# extension it imports torch first, then checks the driver and loads what torch did not.
import _tiny_conv_cuda_cuda_libs

_tiny_conv_cuda_cuda_libs.preload()

import tiny_conv_cuda  # noqa: E402,F401  (loading the library registers the operators)


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``out[b, d, t] = sum_k weight[d, k] * x[b, d, t - (width - 1) + k]`` (zero before the
    start); ``x`` is (batch, dim, seqlen) float32, ``weight`` (dim, width)."""
    return torch.ops.tiny_conv.causal_conv1d(x, weight)
