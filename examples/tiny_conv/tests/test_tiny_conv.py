"""The project's own test (not shipped: `tests/` is left out of the wheel by name)."""

import torch

from tiny_conv import causal_conv1d
from tiny_conv.utils import reference


def test_matches_reference():
    x = torch.randn(2, 3, 17)
    w = torch.randn(3, 4)
    torch.testing.assert_close(causal_conv1d(x, w), reference(x, w))
