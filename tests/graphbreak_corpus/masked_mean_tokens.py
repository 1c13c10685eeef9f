"""MASKED REDUCTIONS, `x[mask].mean(dim=0)` with a mask over the leading dims. Mean pooling of
token embeddings over non-padding tokens of the whole batch (a corpus-level centroid).

Breaks on torch 2.13: `hidden[valid]` boolean-mask indexing has a data-dependent shape.
Expected: left alone. A reduction along a dim of a selection whose mask covers only the
leading dims is outside the masked-reduction rule (which proves the mask covers x and the
reduction is over everything); the break is reported, not rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class TokenCentroid(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        valid = attention_mask.bool()
        centroid = hidden[valid].mean(dim=0)
        return self.proj(hidden - centroid)


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    attention_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    return [torch.randn(2, 4, 8), attention_mask]
