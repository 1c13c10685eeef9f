"""LOOPS (negative), a data-dependent `continue` protecting a division: chunks of `y` with a
zero are skipped before dividing by them.

Breaks on torch 2.13: `if b.abs().min() == 0: continue` ("Data-dependent branching").
Expected: unchanged: torch.where would compute `a / b` on the skipped chunks too, and the
gradient through the branch not taken would be NaN where `b` is 0; the rewrite leaves a
note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class SafeRatio(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for a, b in zip(x.split(2), y.split(2)):
            if b.abs().min() == 0:
                continue
            total = total + (a / b).sum()
        return total


def get_inputs():
    torch.manual_seed(0)
    y = torch.randn(6)
    y[3] = 0.0
    return [torch.randn(6), y]
