"""GUARDS (negative), a data-dependent `continue` in front of a side effect: chunks with a
negative sum are skipped, the others are collected in a Python list.

Breaks on torch 2.13: `if chunk.sum() < 0: continue` ("Data-dependent branching").
Expected: unchanged: what follows the `continue` appends to a Python list (the number of
elements kept is data-dependent), which no torch.where can express; the rewrite leaves a
note saying why.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class PositiveChunks(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = [torch.zeros(2)]
        for chunk in x.split(2):
            if chunk.sum() < 0:
                continue
            kept.append(chunk)
        return torch.stack(kept).sum(0)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(6)]
