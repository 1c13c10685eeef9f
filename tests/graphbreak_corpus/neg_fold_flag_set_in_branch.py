"""NEGATIVE, an `if`/`elif` chain over a flag that is not bound on every path: `overflow`
is assigned only for inputs longer than two, and the `elif` reads it only when `empty` is
false. Computing every test first would read a name that may be unbound there.

Breaks on torch 2.13: the truth values of the 0-d flags ("Data-dependent branching").
Expected: unchanged (the fold cannot prove the later test safe to compute early).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        empty = torch.all(x == 0)
        if x.shape[0] > 2:
            overflow = torch.any(x.abs() > 100)
        if empty:
            x = x + 1
            return x
        elif overflow:
            x = x / 100
            return x
        return x * 2


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4)]
