"""DEFER, print of an f-string that formats tensors. Training-style loss module that prints
its components with a format spec, as scripts often do.

Breaks on torch 2.13: `print(f"...")` ("Failed to trace builtin operator").
Expected: rewritten so the print is deferred after the graph with the same text; the
tensors are snapshotted at the call and formatted when the message is emitted.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class VerboseDistillLoss(nn.Module):
    def __init__(self, alpha: float = 0.5, temperature: float = 2.0):
        super().__init__()
        self.alpha = alpha
        self.temperature = temperature

    def forward(self, student: torch.Tensor, teacher: torch.Tensor,
                labels: torch.Tensor) -> torch.Tensor:
        t = self.temperature
        ce = F.cross_entropy(student, labels)
        kd = F.kl_div(F.log_softmax(student / t, dim=-1), F.softmax(teacher / t, dim=-1),
                      reduction="batchmean") * t * t
        print(f"ce={ce.detach():.4f} kd={kd.detach():.4f}")
        return self.alpha * ce + (1 - self.alpha) * kd


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(6, 5), torch.randn(6, 5), torch.randint(0, 5, (6,))]
