"""MASKED REDUCTIONS, `x[mask].min()` on an integer tensor. Re-base position ids so the first
non-padding token of a left-padded batch gets position 0.

Breaks on torch 2.13: `position_ids[valid]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten to a torch.where-based min whose fill value fits the dtype: int64 here,
so `torch.iinfo(dtype).max`, not `inf` (which would change the dtype or fail).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class RebasePositions(nn.Module):
    def forward(self, position_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        valid = attention_mask == 1
        first = position_ids[valid].min()
        return (position_ids - first).clamp(min=0)


def get_inputs():
    attention_mask = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]])
    position_ids = torch.arange(5).expand(2, 5) + 3
    return [position_ids, attention_mask]
