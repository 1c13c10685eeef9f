"""LOOPS, `.item()` deciding a `continue`: per-head attention statistics that skip heads
whose peak score exceeds a threshold (outlier heads), accumulated into a running tensor.

Breaks on torch 2.13: `head.amax().item()` (no scalar capture), then the Python `if`.
Expected: rewritten: the condition is read like `.item()` in a select
(`_eqrw_compare(head.amax(), '>', 2.5)`) and the accumulation becomes `_eqrw_skip`.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class HeadStats(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros(scores.shape[-1])
        for head in scores.unbind(0):
            if head.amax().item() > 2.5:
                continue
            acc = acc + head.mean(0)
        return acc


def get_inputs():
    torch.manual_seed(0)
    scores = torch.randn(4, 3, 5)
    scores[1, 0, 0] = 4.0
    return [scores]
