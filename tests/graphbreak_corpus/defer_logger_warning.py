"""DEFER, logger.warning with lazy %-arguments. Activation clipper that logs how many values
it clipped through the module logger.

Breaks on torch 2.13: `logger.warning(...)` ("logging.Logger method not supported for
non-export cases").
Expected: rewritten so the log call is deferred after the graph: same logger, level, message
and arguments (the count tensor snapshotted at the call), same order.
"""

import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)

EXPECTED = "rewrite"


class ActivationClipper(nn.Module):
    def __init__(self, limit: float = 1.5):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_clipped = (x.abs() > self.limit).sum()
        logger.warning("clipping %s of %d activations to +/-%s", n_clipped, x.numel(),
                       self.limit)
        return x.clamp(-self.limit, self.limit)


def get_init_inputs():
    return [1.5]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 8)]
