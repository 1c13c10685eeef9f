"""LOOPS, a data-dependent `continue`: chunks with a negative sum are skipped when
accumulating a statistic (a sum and a count, as in streaming metrics).

Breaks on torch 2.13: `if chunk.sum() < 0: continue` ("Data-dependent branching").
Expected: rewritten: everything after the `continue` assigns names carried from before the
loop, so each becomes `_eqrw_skip(condition, old, lambda: new)`, torch.where when traced;
the loop over `x.split(2)` then unrolls into one graph.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class PositiveChunkSum(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        count = torch.zeros(())
        for chunk in x.split(2):
            s = chunk.sum()
            if s < 0:
                continue
            total = total + s
            count = count + 1
        return total / count.clamp_min(1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(8)]
