"""Transformer feed-forward block: pre-LayerNorm MLP with a tanh-approximated GELU,
LayerScale and a residual connection (ViT / GPT-2 style)."""

import math

import torch
import torch.nn as nn


def new_gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh approximation, as written in the GPT-2 / BERT reference code."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, dropout: float = 0.0,
                 layer_scale_init: float = 1e-1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop = nn.Dropout(dropout)
        self.gamma = nn.Parameter(layer_scale_init * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(self.norm(x))
        h = new_gelu(h)
        h = self.drop(h)
        h = self.fc2(h)
        return x + self.drop(self.gamma * h)


def get_init_inputs():
    return [16, 64]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 16)]
