"""MASKED REDUCTIONS, nonzero, then index, then reduce (functional case). mmdetection-style
sum of the regression loss over positive anchors found with `torch.nonzero`.

Breaks on torch 2.13: `torch.nonzero(...)` has a data-dependent output shape.
Expected: left alone. The indices flow through two statements (`squeeze`, then indexing,
then the reduction), and rewriting only the reduction would leave the nonzero in place; the
single-expression form is in `nonzero_as_tuple_sum.py`.
"""

import torch

EXPECTED = "unchanged"


def positive_anchor_loss(loss: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    pos_inds = torch.nonzero(labels > 0).squeeze(1)
    pos_loss = loss[pos_inds]
    return pos_loss.sum()


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(12), torch.tensor([0, 1, 0, 0, 2, 0, 1, 0, 0, 0, 3, 0])]
