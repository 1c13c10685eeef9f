"""SELECT, same call in both branches: `if c: buf.copy_(A) else: buf.copy_(B)`. Running-max
observer for fake quantization (like torch.ao's MovingAverageMinMaxObserver): jump to a new
maximum at once, otherwise decay towards the batch maximum.

Breaks on torch 2.13: `if batch_amax > self.running_amax:` compares a batch statistic with a
buffer ("Data-dependent branching").
Expected: rewritten to one call `self.running_amax.copy_(torch.where(c, A, B))`; the call and
its receiver are the same in both branches, only the argument differs.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class AmaxObserver(nn.Module):
    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_amax", torch.tensor(1.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_amax = x.detach().abs().amax()
        if batch_amax > self.running_amax:
            self.running_amax.copy_(batch_amax)
        else:
            self.running_amax.copy_(self.momentum * self.running_amax
                                    + (1 - self.momentum) * batch_amax)
        scale = self.running_amax / 127.0
        return (x / scale).round().clamp(-127, 127) * scale


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 8) * 2.0]
