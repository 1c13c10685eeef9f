"""SELECT, conditional expression `A if c else B` (functional case). Adaptive temperature for
distillation logits: soften only when the logits are very peaked.

Breaks on torch 2.13: the ternary's condition `spread > threshold` is a 0-d tensor computed
from the input ("Data-dependent branching").
Expected: rewritten to torch.where; both arms are pure tensor expressions.
"""

import torch

EXPECTED = "rewrite"


def soften_logits(logits: torch.Tensor, temperature: float = 4.0,
                  threshold: float = 5.0) -> torch.Tensor:
    logits = logits - logits.amax(dim=-1, keepdim=True)
    spread = logits.std(dim=-1).mean()
    logits = logits / temperature if spread > threshold else logits
    return logits.log_softmax(dim=-1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 10) * 8.0]
