"""SCALAR IN CONTROL FLOW, `.tolist()` of a reduction feeding `if`, directly and through a
name. A padding-aware pooling head: it rescales when the largest activation is large and
zeroes padded positions only when the batch has padding, as tokenizer-driven code checks
with `mask.any().tolist()`.

Breaks on torch 2.13: `Tensor.tolist()` ("Tensor.tolist() with non-integer tensor", then
"Data dependent operator" for the bool mask), twice.
Expected: rewritten: `x.amax().tolist() > 4.0` is read like `.item()` (the reduction is
0-d), `has_pad = mask.any().tolist()` becomes `_eqrw_item(...)` (its only use is the
condition of a select), and both `if`s become torch.where when traced.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class PaddedPool(nn.Module):
    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        if x.amax().tolist() > 4.0:
            scaled = x * 0.25
        else:
            scaled = x * 1.0
        has_pad = pad.any().tolist()
        if has_pad:
            scaled = scaled.masked_fill(pad, 0.0)
        return scaled.sum(-1)


def get_inputs():
    torch.manual_seed(0)
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True
    return [torch.randn(2, 5) * 3.0, pad]
