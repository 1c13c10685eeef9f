"""SELECT with calls, if/else assignment whose branches call submodules. Confidence-based
early exit (DeeBERT / CALM style): confident batches use the shallow head, the rest go through
an extra block first.

Breaks on torch 2.13: `if confidence.mean() > self.threshold:` ("Data-dependent branching").
Expected: rewritten to torch.cond (branches call submodules, so torch.where would run both
and is not the chosen form); both branches return tensors of the same shape and dtype.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class EarlyExitClassifier(nn.Module):
    def __init__(self, dim: int, num_classes: int, threshold: float = 0.5):
        super().__init__()
        self.probe = nn.Linear(dim, num_classes)
        self.extra_block = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.head = nn.Linear(dim, num_classes)
        self.threshold = threshold

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        confidence = self.probe(h).softmax(dim=-1).amax(dim=-1)
        if confidence.mean() > self.threshold:
            logits = self.head(h)
        else:
            logits = self.head(h + self.extra_block(h))
        return logits


def get_init_inputs():
    return [16, 4]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 16)]
