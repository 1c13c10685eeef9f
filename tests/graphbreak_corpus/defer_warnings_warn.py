"""DEFER, warnings.warn. timm-style block with a deprecated constructor option that warns
(FutureWarning) on every forward call while the legacy behaviour is used.

Breaks on torch 2.13: `warnings.warn(...)` ("Attempted to call function marked as skipped").
The guarding `if self.legacy_scale:` is a Python flag and does not break.
Expected: rewritten so the warning is deferred after the graph: same category and message.
"""

import warnings

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class LayerScaleBlock(nn.Module):
    def __init__(self, dim: int, init_values: float = 1e-5, legacy_scale: bool = True):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.gamma = nn.Parameter(init_values * torch.ones(dim))
        self.legacy_scale = legacy_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if self.legacy_scale:
            warnings.warn("legacy_scale=True is deprecated and will be removed; "
                          "use init_values instead", FutureWarning, stacklevel=2)
            h = h * 0.5
        return x + self.gamma * h


def get_init_inputs():
    return [16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 16)]
