"""ATTRIBUTE REFRESH, as transformers' CTRL moves its sinusoidal table in `forward`: a buffer
the model keeps is converted to the input's device and dtype and stored back
(`self.pos_encoding = self.pos_encoding.to(...)`).

Breaks on torch 2.13: `Unsupported python_type() call` (a tensor stored into a module
attribute). Expected: rewritten: eagerly the same store; traced, the store of the same object
is left out (the table is already on that device, in that dtype).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class SinusoidalEmbed(nn.Module):
    def __init__(self, positions: int = 16, hidden: int = 8):
        super().__init__()
        angle = torch.arange(positions)[:, None] / 10000 ** (torch.arange(hidden) / hidden)
        self.pos_encoding = nn.Buffer(torch.cat([angle.sin(), angle.cos()], -1),
                                      persistent=False)
        self.proj = nn.Linear(2 * hidden, hidden)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        # `self.pos_encoding` is not moved with the model: move it by hand.
        self.pos_encoding = self.pos_encoding.to(device=x.device, dtype=x.dtype)
        return x + self.proj(self.pos_encoding[position_ids, :])


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 8), torch.arange(5).expand(2, 5)]


def get_init_inputs():
    torch.manual_seed(0)
    return []
