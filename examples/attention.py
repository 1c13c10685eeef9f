"""Causal multi-head self-attention with ALiBi position biases (timm / MPT style):
fused qkv projection, scaled dot product, causal mask, softmax, output projection."""

import torch
import torch.nn as nn


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """Geometric per-head slopes 2^(-8/n), 2^(-16/n), ... from the ALiBi paper."""
    exponents = torch.arange(1, num_heads + 1, dtype=torch.float32) * (-8.0 / num_heads)
    return 2 ** exponents


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int = 4, max_len: int = 64,
                 attn_drop: float = 0.0, proj_drop: float = 0.0):
        super().__init__()
        assert dim % num_heads == 0, "dim must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)
        causal = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]

        attn = q @ k.transpose(-2, -1) * self.scale
        pos = torch.arange(T, device=x.device)
        distance = pos[None, :] - pos[:, None]
        attn = attn + self.slopes.view(1, -1, 1, 1) * distance
        attn = attn.masked_fill(~self.causal[:T, :T], float("-inf"))
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)

        x = (attn @ v).transpose(1, 2).reshape(B, T, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


def get_init_inputs():
    return [32, 4]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 10, 32)]
