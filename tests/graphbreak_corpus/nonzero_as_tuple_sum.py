"""MASKED REDUCTIONS, nonzero as a tuple of indices, then index, then reduce (functional
case). The positive-anchor loss written with `torch.nonzero(..., as_tuple=True)`.

Breaks on torch 2.13: `torch.nonzero(...)` has a data-dependent output shape.
Expected: rewritten to `_eqrw_masked(loss, labels > 0, "sum")`: torch.where over the whole
tensor when traced; the same value, 0 when there is no positive anchor.
"""

import torch

EXPECTED = "rewrite"


def positive_anchor_loss(loss: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    positive = labels > 0
    return loss[torch.nonzero(positive, as_tuple=True)].sum() / positive.sum().clamp(min=1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(12), torch.tensor([0, 1, 0, 0, 2, 0, 1, 0, 0, 0, 3, 0])]
