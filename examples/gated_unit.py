"""LLaMA-style SwiGLU feed-forward with RMSNorm pre-normalisation and a residual:
w2(silu(w1(x)) * w3(x)), hidden size rounded to a multiple of `multiple_of`."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


class SwiGLUFeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, multiple_of: int = 32, eps: float = 1e-6):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.eps = eps
        self.norm_weight = nn.Parameter(torch.ones(dim))
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = rms_norm(x, self.norm_weight, self.eps)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_init_inputs():
    return [32, 128]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6, 32)]
