"""DEFER, logger.warning_once (Hugging Face style). transformers' `logging.get_logger` hands
out loggers with `warning_once`, an lru_cached method patched onto logging.Logger; it is
replicated here. Attention layer that warns once that it falls back to the eager path when
attention weights are requested (the most frequent fixable break in HF models).

Breaks on torch 2.13: `logger.warning_once(...)` calls `self.warning` inside an lru_cache
wrapper ("logging.Logger method not supported for non-export cases").
Expected: rewritten so the warning is deferred after the graph; still emitted once per
process with the same text.
"""

import functools
import logging

import torch
import torch.nn as nn


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once
logger = logging.getLogger(__name__)

EXPECTED = "rewrite"


class SelfAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int, output_attentions: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.output_attentions = output_attentions

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        if self.output_attentions:
            logger.warning_once("sdpa does not support output_attentions=True; "
                                "falling back to the eager attention implementation")
        attn = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y), attn


def get_init_inputs():
    return [16, 2]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 16)]
