"""NEGATIVE, `.item()` used as a Python int. Adaptive-computation-time style block that runs
its shared layer a data-dependent number of times, read from a halting predictor.

Breaks on torch 2.13: `.item()` ("Unsupported Tensor.item() call with
capture_scalar_outputs=False").
Expected: left alone: the value leaves tensor land (int() and range()), so it cannot stay a
0-d tensor; reported, not rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class AdaptiveDepth(nn.Module):
    def __init__(self, dim: int, max_steps: int = 4):
        super().__init__()
        self.halt = nn.Linear(dim, 1)
        self.layer = nn.Linear(dim, dim)
        self.max_steps = max_steps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ponder = torch.sigmoid(self.halt(x)).mean() * self.max_steps
        steps = int(ponder.ceil().item())
        for _ in range(steps):
            x = x + torch.tanh(self.layer(x))
        return x


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 8)]
