"""GUARD, `if <data-dependent>: raise E("literal")`. Token embedding that validates ids
before the lookup (Hugging Face models raise a ValueError on out-of-vocabulary ids).

Breaks on torch 2.13: `if (input_ids >= ...).any() or (input_ids < 0).any():` branches on
tensors ("Data-dependent branching").
Expected: rewritten to a torch._check / torch._assert_async form with the same message; for
valid ids the output is unchanged.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class CheckedEmbedding(nn.Module):
    def __init__(self, vocab_size: int, dim: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed = nn.Embedding(vocab_size, dim)
        self.scale = dim ** 0.5

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if (input_ids >= self.vocab_size).any() or (input_ids < 0).any():
            raise ValueError("input_ids contain values outside the vocabulary")
        return self.embed(input_ids) * self.scale


def get_init_inputs():
    return [100, 16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randint(0, 100, (2, 9))]
