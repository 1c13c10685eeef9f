"""MASKED SCATTER, `out[mask] = f(x[mask])` with f elementwise: activations above a bound
are clipped and damped, as in outlier-suppression layers of quantisation-friendly models.

Breaks on torch 2.13: `h[big]` boolean-mask indexing has a data-dependent shape.
Expected: rewritten: f (clamp, then * 0.5) runs on the whole of `h` and
`out.copy_(torch.where(big, f(h), out))` writes the selected elements in place; values and
the gradients of the linear layer are the original's.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class OutlierClip(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        big = h.abs() > 1.0
        out = h.clone()
        out[big] = h[big].clamp(-1.0, 1.0) * 0.5
        return out


def get_init_inputs():
    torch.manual_seed(0)
    return []


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 6) * 2.0]
