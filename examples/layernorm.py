"""Hand-written LayerNorm over the last dimension, computed from mean and biased
variance as in many research repos (ConvNeXt, early BERT ports)."""

import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, normalized_shape: int, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        x = (x - mean) / (var + self.eps) ** 0.5
        if self.elementwise_affine:
            x = x * self.weight + self.bias
        return x


def get_init_inputs():
    return [24]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 7, 24) * 4 + 1]
