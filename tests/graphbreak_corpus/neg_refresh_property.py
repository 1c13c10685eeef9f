"""ATTRIBUTE REFRESH through a property: `self.scale = self.scale.to(x.dtype)` where `scale`
is a property whose setter stores twice the value. Leaving the store out would skip the
setter, so it must stay.

Does not break on torch 2.13 (Dynamo runs the setter, which stores into a plain attribute).
Expected: unchanged (the class defines `scale` itself: a property, not a plain attribute).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class DoublingScale(nn.Module):
    def __init__(self, hidden: int = 8):
        super().__init__()
        self._scale = torch.ones(hidden)

    @property
    def scale(self) -> torch.Tensor:
        return self._scale

    @scale.setter
    def scale(self, value: torch.Tensor) -> None:
        self._scale = value * 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale = self.scale.to(x.dtype)
        return x * self.scale


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 8)]
