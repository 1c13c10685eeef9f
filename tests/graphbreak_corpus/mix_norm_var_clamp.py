"""MIX, else-less SELECT in a normalisation layer. LayerNorm written out by hand that clamps
the variance only when some row is (nearly) constant, e.g. a padding row of zeros.

Breaks on torch 2.13: `if var.min() < self.eps:` ("Data-dependent branching").
Expected: rewritten to `var = torch.where(var.min() < self.eps, var.clamp(min=self.eps), var)`;
the example input contains a constant row, so the clamp matters.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class SafeLayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        if var.min() < self.eps:
            var = var.clamp(min=self.eps)
        return (x - mean) / var.sqrt() * self.weight + self.bias


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)
    x[1, 3] = 0.0  # a padding row: zero variance
    return [x]
