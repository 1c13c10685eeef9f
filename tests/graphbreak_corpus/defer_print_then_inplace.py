"""DEFER, print followed by an in-place update of the printed tensor. Batch norm written out by
hand that prints its running mean before updating it in place.

Breaks on torch 2.13: `print(...)` ("Failed to trace builtin operator").
Expected: rewritten so the print is deferred after the graph and shows the running mean
as it was at the call (before `mul_`/`add_`): the argument must be snapshotted (cloned).
Deferring without a snapshot prints the updated buffer instead (wrong).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class VerboseBatchNorm1d(nn.Module):
    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=0)
        var = x.var(dim=0, unbiased=False)
        print("running_mean before update:", self.running_mean)
        self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
        self.running_var.mul_(1 - self.momentum).add_(self.momentum * var)
        return (x - mean) / torch.sqrt(var + self.eps)


def get_init_inputs():
    return [4]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(8, 4) + 3.0]
