"""NEGATIVE, branches assign different targets. Mixture-of-depths-style block: confident
batches update the hidden state, the others only record an auxiliary penalty.

Breaks on torch 2.13: `if router_prob.mean() > self.threshold:` ("Data-dependent
branching").
Expected: left alone: the if-branch assigns `hidden`, the else-branch assigns `aux_loss`, so
there is no single select; the break is reported, not rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class SkippableBlock(nn.Module):
    def __init__(self, dim: int, threshold: float = 0.5):
        super().__init__()
        self.router = nn.Linear(dim, 1)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.threshold = threshold

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        router_prob = torch.sigmoid(self.router(hidden))
        aux_loss = hidden.new_zeros(())
        if router_prob.mean() > self.threshold:
            hidden = hidden + router_prob * self.mlp(hidden)
        else:
            aux_loss = (1 - router_prob).pow(2).mean()
        return hidden, aux_loss


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 3, 8)]
