"""NEGATIVE, static condition on a shape. Contrastive projector that only normalises with
batch statistics when the batch has more than two samples.

Does not break on torch 2.13: `if x.shape[0] > 2:` is resolved at trace time (a guard on the
input shape), not data-dependent.
Expected: left alone: static condition (shape).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class Projector(nn.Module):
    def __init__(self, dim: int, out_dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.fc(x)
        if x.shape[0] > 2:
            z = (z - z.mean(dim=0)) / (z.std(dim=0) + 1e-5)
        else:
            z = z / (z.norm(dim=-1, keepdim=True) + 1e-5)
        return z


def get_init_inputs():
    return [16, 8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 16)]
