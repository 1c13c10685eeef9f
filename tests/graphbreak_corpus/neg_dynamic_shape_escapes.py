"""NEGATIVE, dynamic shape escapes (functional case). Select the positive logits of a batch
and return them: the masked result itself is the output, not reduced.

Breaks on torch 2.13: `logits[logits > 0]` boolean-mask indexing has a data-dependent shape.
Expected: left alone: the data-dependent shape escapes to the caller; reported, not rewritten.
"""

import torch

EXPECTED = "unchanged"


def positive_logits(logits: torch.Tensor) -> torch.Tensor:
    logits = logits - logits.mean()
    return logits[logits > 0]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 5)]
