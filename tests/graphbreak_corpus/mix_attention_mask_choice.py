"""MIX, SELECT inside attention. Multi-head self-attention that skips the padding bias when
the batch has no padding (the fast-path check Hugging Face models do before SDPA), written as
an if/else choice between two additive biases.

Breaks on torch 2.13: `if attention_mask.all():` ("Data-dependent branching").
Expected: left alone. The two biases have different shapes ((B, H, T, T) and (B, 1, 1, T)),
so torch.where would change the bias's shape (and torch.cond would refuse the branches):
the select rule only rewrites branches it proves to have the same shape.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5
        if attention_mask.all():
            bias = torch.zeros_like(scores)
        else:
            bias = (1.0 - attention_mask[:, None, None, :].to(scores.dtype)) * -1e4
        attn = (scores + bias).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


def get_init_inputs():
    return [16, 2]


def get_inputs():
    torch.manual_seed(0)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    return [torch.randn(2, 6, 16), attention_mask]
