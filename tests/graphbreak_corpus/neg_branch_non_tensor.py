"""NEGATIVE, branches produce non-tensors. Sparse/dense dispatch: a density test picks a
Python string that selects the implementation.

Breaks on torch 2.13: the ternary's condition `density < self.sparse_threshold` is a tensor
("Data-dependent branching").
Expected: left alone: the arms are Python strings, not tensors; reported, not rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class DispatchLinear(nn.Module):
    def __init__(self, dim: int, out_dim: int, sparse_threshold: float = 0.3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, dim) * 0.1)
        self.sparse_threshold = sparse_threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        density = (x != 0).float().mean()
        mode = "sparse" if density < self.sparse_threshold else "dense"
        if mode == "sparse":
            return torch.sparse.mm(x.to_sparse(), self.weight.t())
        return x @ self.weight.t()


def get_init_inputs():
    return [8, 4]


def get_inputs():
    torch.manual_seed(0)
    return [torch.relu(torch.randn(5, 8))]
