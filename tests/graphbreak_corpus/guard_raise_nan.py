"""GUARD, `if <data-dependent>: raise E("literal")`. Transformer block with a NaN check on
its output, as found in training code that wants to fail fast on divergence.

Breaks on torch 2.13: `if torch.isnan(out).any():` ("Data-dependent branching").
Expected: rewritten to a torch._check / torch._assert_async form that keeps the message
"NaN detected in MLP output"; on NaN-free inputs the output is unchanged.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class CheckedMLP(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))
        if torch.isnan(out).any():
            raise RuntimeError("NaN detected in MLP output")
        return x + out


def get_init_inputs():
    return [16, 32]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6, 16)]
