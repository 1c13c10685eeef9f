"""GUARDS, a data-dependent `raise` inside a loop over layers: a residual stack that checks
every layer's output for NaN, as training loops and debug builds do.

Breaks on torch 2.13: `if torch.isnan(h).any(): raise ...` ("Data-dependent branching"),
once per layer (the loop is unrolled).
Expected: rewritten: each check becomes `_eqrw_check` (torch._assert_async when traced), so
the unrolled loop is one graph; eagerly the same ValueError.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class CheckedStack(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList(nn.Linear(6, 6) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = h + torch.tanh(layer(h))
            if torch.isnan(h).any():
                raise ValueError("NaN after a residual layer")
        return h


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6)]
