"""Python side of torch_axpy's operator: the fake kernel for torch.compile."""

import torch
from torch import Tensor

__all__ = ["axpy"]


def axpy(x: Tensor, y: Tensor, alpha: float) -> Tensor:
    """``alpha * x + y`` computed by one kernel (CPU or CUDA)."""
    # Checked here too, so that a bad call raises in Python whichever C++ runtime the kernels
    # were built with (the kernels check again).
    if x.shape != y.shape or x.dtype != torch.float or y.dtype != torch.float:
        raise ValueError(f"axpy: float32 tensors of one shape expected, got {x.dtype} {tuple(x.shape)} "
                         f"and {y.dtype} {tuple(y.shape)}")
    return torch.ops.torch_axpy.axpy.default(x, y, alpha)


@torch.library.register_fake("torch_axpy::axpy")
def _(x, y, alpha):
    torch._check(x.shape == y.shape)
    torch._check(x.dtype == torch.float and y.dtype == torch.float)
    return torch.empty_like(x)
