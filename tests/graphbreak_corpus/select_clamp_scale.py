"""SELECT, if/else assignment. Max-norm embedding rescaling (as in nn.Embedding(max_norm=...)).

Breaks on torch 2.13: `if norm > self.max_norm:` branches on a 0-d tensor computed from the
input ("Data-dependent branching").
Expected: rewritten to torch.where; both branches are pure tensor expressions and assign the
same name.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class MaxNormEmbedding(nn.Module):
    def __init__(self, num_embeddings: int, dim: int, max_norm: float = 1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, dim))
        self.max_norm = max_norm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.weight[input_ids]
        norm = x.norm(dim=-1, keepdim=True).amax()
        if norm > self.max_norm:
            scale = self.max_norm / norm
        else:
            scale = torch.ones_like(norm)
        return x * scale


def get_init_inputs():
    return [50, 16, 2.0]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randint(0, 50, (2, 7))]
