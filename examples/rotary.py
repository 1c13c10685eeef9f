"""Rotary position embedding (RoFormer / GPT-NeoX style) applied to query and key
tensors of shape (batch, heads, seq, head_dim), with optional partial rotation."""

import torch
import torch.nn as nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Rotate pairs across the two halves of the last dimension: (x1, x2) -> (-x2, x1)."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, rotary_pct: float = 1.0, base: float = 10000.0):
        super().__init__()
        self.rotary_dim = int(head_dim * rotary_pct)
        inv_freq = 1.0 / (base ** (torch.arange(0, self.rotary_dim, 2).float() / self.rotary_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor):
        seq_len = q.shape[-2]
        t = torch.arange(seq_len, device=q.device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None, :, :], emb.sin()[None, None, :, :]

        q_rot, q_pass = q[..., : self.rotary_dim], q[..., self.rotary_dim :]
        k_rot, k_pass = k[..., : self.rotary_dim], k[..., self.rotary_dim :]
        q_rot = q_rot * cos + rotate_half(q_rot) * sin
        k_rot = (k_rot * cos) + (rotate_half(k_rot) * sin)
        return torch.cat((q_rot, q_pass), dim=-1), torch.cat((k_rot, k_pass), dim=-1)


def get_init_inputs():
    return [16, 0.5]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 9, 16), torch.randn(2, 4, 9, 16)]
