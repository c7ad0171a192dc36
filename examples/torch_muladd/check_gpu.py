#!/usr/bin/env python3
"""End-to-end check of the installed torch_muladd wheel on a machine with a GPU and torch.

Run after `pip install torch_muladd-*.whl`:  python check_gpu.py
Exits 0 when the CUDA results (forward and backward) equal the CPU reference.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import torch  # noqa: E402

import torch_muladd  # noqa: E402


def main():
    if not torch.cuda.is_available():
        sys.exit("torch_muladd FAILED: no CUDA device visible to torch")
    a = torch.randn(1_000_003, device="cuda", requires_grad=True)
    b = torch.randn(1_000_003, device="cuda", requires_grad=True)
    out = torch_muladd.muladd(a, b, 0.5)
    out.sum().backward()
    ref = a.detach().cpu() * b.detach().cpu() + 0.5
    torch.testing.assert_close(out.detach().cpu(), ref)
    torch.testing.assert_close(a.grad.cpu(), b.detach().cpu())
    torch.testing.assert_close(b.grad.cpu(), a.detach().cpu())
    samples = [[torch.randn(64, device="cuda"), torch.randn(64, device="cuda"), 2.0]]
    for args in samples:
        torch.library.opcheck(torch.ops.torch_muladd.muladd.default, args)
    print(f"torch_muladd OK on {torch.cuda.get_device_name()} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
