"""examples/torch_muladd's operator, built by setup.py (ops.py is copied from the example)."""

import torch  # noqa: F401  (torch loads its own libraries first)

from . import _C  # noqa: E402,F401  (loading the library registers the operators)
from .ops import muladd  # noqa: E402

__all__ = ["muladd"]
