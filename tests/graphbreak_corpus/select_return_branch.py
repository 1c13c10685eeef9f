"""SELECT, `if c: return A else: return B`. ReZero-style residual that falls back to the skip
path when the branch output blows up relative to its input.

Breaks on torch 2.13: `if delta.abs().mean() > ...:` compares two input-dependent 0-d tensors
("Data-dependent branching").
Expected: rewritten to `return torch.where(c, A, B)`; both returns are pure tensor expressions.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class GuardedResidual(nn.Module):
    def __init__(self, dim: int, ratio: float = 4.0):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.alpha = nn.Parameter(torch.full((dim,), 0.1))
        self.ratio = ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        delta = self.fc(x)
        if delta.abs().mean() > self.ratio * x.abs().mean():
            return x
        else:
            return x + self.alpha * delta


def get_init_inputs():
    return [16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 16)]
