"""SELECT, same call after idempotent preparations: LongRoPE as transformers 4.5x writes it
(`modeling_rope_utils.dynamic_rope_update`). Past the original context length the long
frequencies are computed once and kept (`if not hasattr(self, "long_inv_freq"): ...`), the
short ones are moved by hand (`self.original_inv_freq = self.original_inv_freq.to(device)`),
and either is registered as the `inv_freq` buffer.

Breaks on torch 2.13: `if seq_len > original_max_position_embeddings:` on
`seq_len = torch.max(position_ids) + 1` ("Data-dependent branching").
Expected: rewritten to `if _eqrw_compiling(): <both preparations>; register_buffer(...,
_eqrw_where(c, long, short))`, the original `if` kept whole under `else` (eager runs it).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class Config:
    original_max_position_embeddings = 8
    head_dim = 8


def _rope_init(config, device, seq_len=None):
    base = 10000.0 if seq_len is None else 40000.0
    inv_freq = 1.0 / base ** (torch.arange(0, config.head_dim, 2, device=device) / config.head_dim)
    return inv_freq, 1.0


def dynamic_rope_update(rope_forward):
    def longrope_frequency_update(self, position_ids, device):
        """Long frequencies past the original length, short ones otherwise."""
        seq_len = torch.max(position_ids) + 1
        original_max_position_embeddings = self.config.original_max_position_embeddings
        if seq_len > original_max_position_embeddings:
            if not hasattr(self, "long_inv_freq"):
                self.long_inv_freq, _ = self.rope_init_fn(
                    self.config, device, seq_len=original_max_position_embeddings + 1
                )
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            # moved by hand: a plain attribute does not follow Module.to
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

    def wrapper(self, x, position_ids):
        longrope_frequency_update(self, position_ids, device=x.device)
        return rope_forward(self, x, position_ids)

    return wrapper


class LongRope(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.rope_init_fn = _rope_init
        inv_freq, _ = self.rope_init_fn(self.config, None)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @dynamic_rope_update
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + x.flip(-1) * emb.sin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 12, 8), torch.arange(12).expand(2, 12)]
