"""MIX, GUARD + DEFER. Label-smoothed cross-entropy (fairseq style) that fails fast on a NaN
loss and logs the loss components at INFO level.

Breaks on torch 2.13: `if torch.isnan(loss):` ("Data-dependent branching") and
`logger.info(...)` ("logging.Logger method not supported for non-export cases").
Expected: rewritten: the raise with a literal message becomes a torch._check /
torch._assert_async form, and the log call is deferred after the graph with the same
logger, level, text and order.
"""

import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)

EXPECTED = "rewrite"


class LabelSmoothedCrossEntropy(nn.Module):
    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        lprobs = F.log_softmax(logits, dim=-1)
        nll = -lprobs.gather(dim=-1, index=target.unsqueeze(-1)).squeeze(-1)
        smooth = -lprobs.mean(dim=-1)
        loss = ((1.0 - self.smoothing) * nll + self.smoothing * smooth).mean()
        if torch.isnan(loss):
            raise FloatingPointError("NaN loss encountered")
        logger.info("loss %s nll %s", loss.detach(), nll.detach().mean())
        return loss


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(6, 7), torch.randint(0, 7, (6,))]
