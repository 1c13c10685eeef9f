"""MASKED REDUCTIONS, `x[mask].mean()` with an empty mask. Depth-estimation L1 loss averaged
over pixels with valid ground truth; the example input has NO valid pixel.

Breaks on torch 2.13: `err[valid]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten to a torch.where-based sum divided by the mask count. Edge case: the mean
of nothing is NaN in eager (0/0); the rewrite must give NaN too (not 0, not an error), and
keep the float dtype.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class MaskedL1DepthLoss(nn.Module):
    def __init__(self, max_depth: float = 10.0):
        super().__init__()
        self.max_depth = max_depth

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        valid = (target > 0) & (target < self.max_depth)
        err = (pred - target).abs()
        return err[valid].mean()


def get_inputs():
    torch.manual_seed(0)
    pred = torch.rand(2, 1, 4, 4) * 5
    target = torch.zeros(2, 1, 4, 4)  # no ground truth anywhere: the mask is all False
    return [pred, target]
