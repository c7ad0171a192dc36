"""Python side of torch_axpy's operator: the fake kernel for torch.compile."""

import torch
from torch import Tensor

__all__ = ["axpy"]


def axpy(x: Tensor, y: Tensor, alpha: float) -> Tensor:
    """``alpha * x + y`` computed by one kernel (CPU or CUDA)."""
    return torch.ops.torch_axpy.axpy.default(x, y, alpha)


@torch.library.register_fake("torch_axpy::axpy")
def _(x, y, alpha):
    torch._check(x.shape == y.shape)
    torch._check(x.dtype == torch.float and y.dtype == torch.float)
    return torch.empty_like(x)
