"""GUARDS (negative), a data-dependent `continue`: chunks with a negative sum are skipped
when accumulating a statistic.

Breaks on torch 2.13: `if chunk.sum() < 0: continue` ("Data-dependent branching").
Expected: unchanged: skipping the rest of the iteration would have to become a select over
the following statements, a rewrite of several statements at once that the pack does not
make.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class PositiveChunkSum(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for chunk in x.split(2):
            if chunk.sum() < 0:
                continue
            total = total + chunk.sum()
        return total


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(6)]
