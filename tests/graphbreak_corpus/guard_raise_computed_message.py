"""GUARD, a data-dependent branch raises with a computed message. Embedding lookup that
reports the offending id and the vocabulary size in an f-string.

Breaks on torch 2.13: `if (input_ids >= self.vocab_size).any():` ("Data-dependent
branching").
Expected: rewritten: the test becomes `_eqrw_fails(...)` and the raise stays as written, so
eagerly the same IndexError with the same formatted message; traced, an in-graph check whose
message is the f-string's text (its fields unformatted: a graph cannot format them).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class VocabEmbedding(nn.Module):
    def __init__(self, vocab_size: int, dim: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed = nn.Embedding(vocab_size, dim)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if (input_ids >= self.vocab_size).any():
            raise IndexError(f"token id {int(input_ids.max())} is out of range for a "
                             f"vocabulary of {self.vocab_size}")
        return self.embed(input_ids)


def get_init_inputs():
    return [50, 8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randint(0, 50, (2, 6))]
