"""LOOPS (negative), a data-dependent `continue` protecting a division: chunks of `y` with a
zero are skipped before taking their reciprocal.

Breaks on torch 2.13: `if b.abs().min() == 0: continue` ("Data-dependent branching").
Expected: unchanged: torch.where would compute `1.0 / b` on the skipped chunks too, and the
gradient through the branch not taken would be NaN where `b` is 0; the rewrite leaves a
note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class SafeRatio(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for b in y.split(2):
            if b.abs().min() == 0:
                continue
            total = total + (1.0 / b).sum()
        return total


def get_inputs():
    torch.manual_seed(0)
    y = torch.randn(6)
    y[3] = 0.0
    return [y]
