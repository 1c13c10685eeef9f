"""SELECT, else-less `if c: x = A` with x bound before. Logit soft-capping applied only when
the largest logit exceeds the cap (a "lazy" variant of Gemma-2's final-logit soft-capping).

Breaks on torch 2.13: `if logits.abs().amax() > self.cap:` ("Data-dependent branching").
Expected: rewritten to `logits = torch.where(c, A, logits)`; the branch is a pure tensor
expression and `logits` is bound before the if.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class CappedLMHead(nn.Module):
    def __init__(self, dim: int, vocab_size: int, cap: float = 2.0):
        super().__init__()
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)
        self.cap = cap

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(hidden_states)
        if logits.abs().amax() > self.cap:
            logits = (logits / self.cap).tanh() * self.cap
        return logits


def get_init_inputs():
    return [16, 32]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6, 16) * 3.0]
