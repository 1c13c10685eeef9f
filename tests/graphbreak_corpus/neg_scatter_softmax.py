"""MASKED SCATTER (negative), `out[mask] = x[mask].softmax(-1)`: a softmax over the selected
scores only, as in sparse attention over valid positions.

Breaks on torch 2.13: `scores[valid]` boolean-mask indexing has a data-dependent shape.
Expected: unchanged: softmax normalises over the selection, so computing it over the whole
tensor gives other values; the rewrite leaves a note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class ValidSoftmax(nn.Module):
    def forward(self, scores: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        valid = ids >= 0
        out = torch.zeros_like(scores)
        out[valid] = scores[valid].softmax(-1)
        return out


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4), torch.tensor([[3, -1, 5, 2], [-1, -1, -1, -1]])]
