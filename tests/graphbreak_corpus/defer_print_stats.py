"""DEFER, print. Encoder block that prints detached activation statistics for debugging.

Breaks on torch 2.13: `print(...)` ("Failed to trace builtin operator").
Expected: rewritten so the print is deferred and emitted after the graph: same text, same
order, with the tensors' values as they were at the call. The printed tensors are detached,
so their text carries no grad_fn.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class DebugEncoderLayer(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(self.norm(x)))
        stats = h.detach()
        print("fc1 activations: mean", stats.mean(), "max", stats.amax(),
              "dead units", (stats.sum(dim=(0, 1)) == 0).sum())
        out = x + self.fc2(h)
        print("residual norm:", out.detach().norm())
        return out


def get_init_inputs():
    return [16, 32]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 16)]
