"""MASKED SCATTER (negative), the selection taken in its own statement: `y = x[mask]`, then
`out[mask] = y * 2.0`.

Breaks on torch 2.13: `x[keep]` boolean-mask indexing has a data-dependent shape.
Expected: unchanged: the selection statement breaks the graph by itself, and removing it
would need a rewrite of both statements at once, which the pack does not make; the rewrite
leaves a note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class Doubled(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        keep = x > 0.5
        y = x[keep]
        out[keep] = y * 2.0
        return out


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 4)]
