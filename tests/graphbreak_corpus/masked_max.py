"""MASKED REDUCTIONS, `x[mask].max()`. Numerically stable softmax over the non-padding
positions of a batch: subtract the largest logit among valid tokens only.

Breaks on torch 2.13: `logits[valid]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten to `torch.where(valid, logits, -inf).max()` (float input; eager max of an
empty selection raises, the example mask is non-empty).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class MaskedStableSoftmax(nn.Module):
    def forward(self, logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        valid = attention_mask.bool()
        shifted = logits - logits[valid].max()
        weights = shifted.exp() * valid
        return weights / weights.sum(dim=-1, keepdim=True)


def get_inputs():
    torch.manual_seed(0)
    logits = torch.randn(2, 6) * 4
    attention_mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0]])
    logits[:, -1] = 50.0  # the largest logits sit on padding and must be ignored
    return [logits, attention_mask]
