"""NEGATIVE, data-dependent loop. Dynamic loss-scale style rescaling: halve the activations
until they fit in the representable range of half precision.

Breaks on torch 2.13: `while x.abs().amax() > self.limit:` ("Data-dependent branching");
the number of iterations depends on the data.
Expected: left alone: data-dependent loop, reported, never rewritten.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class RangeFitter(nn.Module):
    def __init__(self, limit: float = 6.0e4):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while x.abs().amax() > self.limit:
            x = x * 0.5
        return x.half()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 4) * 3.0e5]
