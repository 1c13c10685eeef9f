"""MASKED SCATTER, `out.index_put_((mask,), x[mask] + c)` with a row mask: padded rows of a
hidden-state matrix are reset to the embedding of a pad token shifted by a constant.

Breaks on torch 2.13: `hidden[pad]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten: the (rows,) mask is broadcast over the feature dimension when traced,
`torch.where` keeps the selected rows of `hidden - 1.0` and writes them into `out` in place.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class ResetPadRows(nn.Module):
    def forward(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        pad = ids == 0
        out = hidden * 2.0
        out.index_put_((pad,), hidden[pad] - 1.0)
        return out


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 3), torch.tensor([5, 0, 7, 0])]
