"""NEGATIVE, a data-dependent branch returns None. Pooler that returns None when the batch
has no real token at all (the caller then skips the pooled output).

Breaks on torch 2.13: `if attention_mask.sum() == 0:` ("Data-dependent branching").
Expected: left alone: a branch returns None, which torch.where / torch.cond cannot express;
the break is reported, not rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class MeanPooler(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor | None:
        if attention_mask.sum() == 0:
            return None
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return torch.tanh(self.dense(pooled))


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 8), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]])]
