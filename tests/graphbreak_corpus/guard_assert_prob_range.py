"""GUARD, `assert <tensor> and <tensor>, "literal"`. Binary cross-entropy on probabilities
that asserts its input lies in [0, 1] (what F.binary_cross_entropy checks in its kernel).

Breaks on torch 2.13: `assert probs.min() >= 0 and probs.max() <= 1, ...`: the `and`
short-circuits on a tensor truth value ("Data-dependent branching").
Expected: rewritten to torch._assert_async (or torch._check) of the combined condition with
the same message.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class ProbabilityBCELoss(nn.Module):
    def __init__(self, eps: float = 1e-7):
        super().__init__()
        self.eps = eps

    def forward(self, probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert probs.min() >= 0 and probs.max() <= 1, "probs must lie in [0, 1]"
        probs = probs.clamp(self.eps, 1 - self.eps)
        loss = -(target * probs.log() + (1 - target) * (1 - probs).log())
        return loss.mean()


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(4, 6), (torch.rand(4, 6) > 0.5).float()]
