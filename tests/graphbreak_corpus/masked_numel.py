"""MASKED REDUCTIONS, `x[mask].numel()`. Focal-loss-style detection classification loss
normalised by the number of anchors that are not ignored (label -1 = ignore).

Breaks on torch 2.13: `labels[labels >= 0]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten to the mask count (`(labels >= 0).sum()`), a 0-d tensor feeding the
division; the loss value is unchanged.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class AnchorClassificationLoss(nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        self.num_classes = num_classes

    def forward(self, cls_logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        num_valid = labels[labels >= 0].numel()
        target = F.one_hot(labels.clamp(min=0), self.num_classes).float()
        loss = F.binary_cross_entropy_with_logits(cls_logits, target, reduction="none")
        loss = loss * (labels >= 0).unsqueeze(-1)
        return loss.sum() / num_valid


def get_init_inputs():
    return [3]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(10, 3), torch.tensor([0, 2, -1, 1, -1, 0, 0, 2, -1, 1])]
