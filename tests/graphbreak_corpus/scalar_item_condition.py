"""SCALAR IN CONTROL FLOW, `.item()` / `bool(tensor)` feeding `if` and a ternary. A
temperature-scaled softmax that sharpens when the max logit is small and clamps an
outlier, as in calibration heads.

Breaks on torch 2.13: `t.item()` (no scalar capture) and `bool(tensor)` (data-dependent
branching).
Expected: rewritten: the comparison stays a 0-d tensor when traced (0.5 is exact in
float32), the branches become torch.where; eagerly the original Python comparison decides.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class CalibratedSoftmax(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        if logits.max().item() < 0.5:
            scaled = logits * 2.0
        else:
            scaled = logits * 1.0
        scaled = scaled.clamp(-3.0, 3.0) if bool((scaled.abs() > 3.0).any()) else scaled
        return scaled.softmax(-1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6) * 0.2]
