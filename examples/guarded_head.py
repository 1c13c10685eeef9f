"""Classification head with the checks production code carries: label ids validated,
padding-aware mean pooling (with a fallback for an all-padding batch), NaN logits
replaced, a loss over the labelled positions only, and accuracy as a Python float."""

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class GuardedHead(nn.Module):
    def __init__(self, dim: int, num_classes: int):
        super().__init__()
        self.num_classes = num_classes
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, num_classes)

    def forward(self, hidden: torch.Tensor, mask, labels: torch.Tensor):
        if (labels >= self.num_classes).any():
            raise ValueError("label id out of range")
        if mask.sum() == 0:
            pooled = hidden.mean(dim=1)
        else:
            pooled = (hidden * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
        logits = self.proj(self.norm(pooled))
        if torch.isnan(logits).any():
            warnings.warn("NaN logits replaced by zeros")
            logits = torch.nan_to_num(logits)
        valid = labels >= 0
        losses = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
        loss = losses[valid].mean()
        accuracy = (logits.argmax(dim=-1) == labels)[valid].float().mean().item()
        return loss, accuracy


def get_init_inputs():
    return [16, 5]


def get_inputs():
    torch.manual_seed(0)
    mask = torch.ones(4, 7)
    mask[:, 5:] = 0
    return [torch.randn(4, 7, 16), mask, torch.tensor([1, 4, -100, 2])]
