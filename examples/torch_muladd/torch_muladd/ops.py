"""Python side of torch_muladd's operators: the fake kernel and autograd."""

import torch
from torch import Tensor

__all__ = ["muladd"]


def muladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """``a * b + c`` computed by one fused kernel (CPU or CUDA)."""
    return torch.ops.torch_muladd.muladd.default(a, b, c)


# Fake (meta) kernels: shapes and dtypes only, for torch.compile and FakeTensor tracing.
@torch.library.register_fake("torch_muladd::muladd")
def _(a, b, c):
    torch._check(a.shape == b.shape)
    torch._check(a.dtype == torch.float and b.dtype == torch.float)
    torch._check(a.device == b.device)
    return torch.empty_like(a)


@torch.library.register_fake("torch_muladd::muladd_backward")
def _(grad, a, b):
    torch._check(grad.shape == a.shape and a.shape == b.shape)
    return torch.empty_like(a), torch.empty_like(b)


def _setup_context(ctx, inputs, output):
    a, b, _c = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a, grad_b = torch.ops.torch_muladd.muladd_backward.default(grad.contiguous(), a, b)
    return (
        grad_a if ctx.needs_input_grad[0] else None,
        grad_b if ctx.needs_input_grad[1] else None,
        None,
    )


torch.library.register_autograd("torch_muladd::muladd", _backward, setup_context=_setup_context)
