"""MASKED REDUCTIONS, `x[mask].sum()` (functional case). Summed masked-LM loss over the
positions that carry a label (-100 marks positions without one).

Breaks on torch 2.13: `nll[mask]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten to `torch.where(mask, nll, 0).sum()` (same dtype, same value; an
all-False mask gives 0 in both).
"""

import torch
import torch.nn.functional as F

EXPECTED = "rewrite"


def masked_lm_loss_sum(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    vocab_size = logits.size(-1)
    nll = F.cross_entropy(logits.view(-1, vocab_size), labels.view(-1), reduction="none")
    mask = labels.view(-1) != -100
    return nll[mask].sum()


def get_inputs():
    torch.manual_seed(0)
    labels = torch.randint(0, 20, (2, 6))
    labels[torch.rand(2, 6) < 0.6] = -100
    return [torch.randn(2, 6, 20), labels]
