"""NEGATIVE, static condition `if attention_mask is not None`. Hugging Face-style attention
scores with an optional additive mask.

Does not break on torch 2.13: an `is not None` test on an argument is resolved at trace time.
Expected: left alone: static condition (None check).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class ScaledDotAttention(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        scores = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
        if attention_mask is not None:
            scores = scores + (1.0 - attention_mask[:, None, :]) * torch.finfo(scores.dtype).min
        return scores.softmax(dim=-1) @ self.v(x)


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 8), torch.tensor([[1.0, 1, 1, 1, 0], [1, 1, 1, 0, 0]])]
