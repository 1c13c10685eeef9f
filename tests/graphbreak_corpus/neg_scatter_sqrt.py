"""MASKED SCATTER (negative for the safe rules), `out[mask] = x[mask].sqrt()`: a square
root taken only where the input is positive.

Breaks on torch 2.13: `x[pos]` boolean-mask indexing has a data-dependent shape.
Expected: unchanged by default: over the whole tensor, sqrt of the negative elements is
NaN; torch.where discards the values, but their gradient (0 times an infinite or NaN
derivative) is NaN where the original's is 0. Only `--unsafe` (mask-scatter-pointwise)
rewrites it.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class PositiveRoot(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        pos = x > 0
        out[pos] = x[pos].sqrt()
        return out


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5)]
