"""GUARD, `assert not <tensor>`. Gaussian negative log-likelihood head that asserts the
predicted variance is strictly positive.

Breaks on torch 2.13: `assert not (var <= 0).any(), "..."` ("Data-dependent branching":
`not` on a tensor). Note: a plain `assert (var > 0).all(), "literal"` does NOT break on this
torch (Dynamo turns it into torch._assert_async itself), hence the `not` form here.
Expected: rewritten to torch._assert_async (or torch._check) with the same message.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class GaussianNLLHead(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.mean = nn.Linear(dim, 1)
        self.raw_var = nn.Linear(dim, 1)

    def forward(self, h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        mu = self.mean(h).squeeze(-1)
        var = F.softplus(self.raw_var(h)).squeeze(-1) + 1e-6
        assert not (var <= 0).any(), "predicted variance must be positive"
        return 0.5 * (var.log() + (target - mu) ** 2 / var).mean()


def get_init_inputs():
    return [16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(8, 16), torch.randn(8)]
