"""NEGATIVE, static condition on `self.training`. Hand-written batch norm: batch statistics
and a running-stat update in training mode, running statistics in eval mode.

Does not break on torch 2.13: `if self.training:` is a Python bool attribute, specialised at
trace time.
Expected: left alone: static condition (self.training).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class SimpleBatchNorm(nn.Module):
    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            mean = x.mean(dim=0)
            var = x.var(dim=0, unbiased=False)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var, self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


def get_init_inputs():
    return [6]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(8, 6)]
