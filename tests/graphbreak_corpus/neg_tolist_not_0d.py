"""SCALAR IN CONTROL FLOW (negative), `.tolist()` of a tensor that is not provably 0-d: the
per-row lengths of a batch, taken to Python to decide on truncation.

Breaks on torch 2.13: `Tensor.tolist()` of the integer row sums ("Data dependent
operator").
Expected: unchanged: `lengths.sum(-1).tolist()` is a list (one number per row), so it is
not a number a tensor comparison could replace; the rewrite leaves a note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class Truncate(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(-1).tolist()
        if lengths:
            x = x * 2.0
        return x


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4), torch.ones(2, 4, dtype=torch.bool)]
