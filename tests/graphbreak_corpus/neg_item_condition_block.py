"""SCALAR IN CONTROL FLOW (negative), Longformer's `is_global_attn = mask.any().item()`
deciding between blocks of statements whose results have different shapes (extra global
attention columns are concatenated only on one path).

Breaks on torch 2.13: `.item()` (no scalar capture), then data-dependent branching.
Expected: unchanged: neither torch.where nor torch.cond can express branches whose outputs
differ in shape, and the flag is a Python bool used by several statements.
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class GlobalScores(nn.Module):
    def forward(self, scores: torch.Tensor, is_global: torch.Tensor) -> torch.Tensor:
        is_global_attn = is_global.flatten().any().item()
        if is_global_attn:
            extra = scores[:, :1] * 2.0
            scores = torch.cat((extra, scores), dim=-1)
        return scores.softmax(-1)


def get_inputs():
    torch.manual_seed(0)
    flags = torch.zeros(2, 4, dtype=torch.bool)
    flags[0, 1] = True
    return [torch.randn(2, 4), flags]
