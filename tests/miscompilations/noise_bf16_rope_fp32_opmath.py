"""bfloat16 RoPE (HF apply_rotary_pos_emb): Inductor fuses q*cos + rotate_half(q)*sin in fp32 and rounds to bf16 once, eager rounds after every op

Issue: https://github.com/pytorch/pytorch/issues/159239
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output bfloat16 q_embed: 141 of 1024 values differ, 13 beyond tolerance (max abs diff 0.0156, 1 bf16 ulp); k_embed: 68 of 512 differ, 1 beyond tolerance; input gradients likewise. Against a float64 run compiled is closer: q_embed max error eager 0.0087, compiled 0.0071 (RMSE 1.7e-3 vs 1.4e-3)
Status: reproduces on 2.13.0+cpu with default settings; closed upstream, maintainer (eellison): "Compared to the fp32 results, compiled gives both a smaller RMSE and smaller maximum error ... emulate_precision_casts will attempt to give more similar results, but we do not guarantee bitwise equivalence"
"""
# eqrewrite-oracle: backend=inductor
import torch


def _rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class ApplyRotaryPosEmb(torch.nn.Module):
    """transformers' apply_rotary_pos_emb (Qwen3) with unsqueeze_dim=1."""

    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        q_embed = (q * cos) + (_rotate_half(q) * sin)
        k_embed = (k * cos) + (_rotate_half(k) * sin)
        return q_embed, k_embed


def get_inputs():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 8, 32, generator=g).to(torch.bfloat16)  # 4 query heads
    k = torch.randn(1, 2, 8, 32, generator=g).to(torch.bfloat16)  # 2 key/value heads
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 32, 2, dtype=torch.float32) / 32))
    freqs = torch.arange(8, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    return [q, k, emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)]
