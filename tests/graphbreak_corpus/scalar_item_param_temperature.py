"""SCALARS, `.item()` on a parameter feeding only tensor arithmetic. CLIP-style contrastive
head whose learned temperature is read out with `.item()`, which also stops its gradient.

Breaks on torch 2.13: `.item()` ("Unsupported Tensor.item() call with
capture_scalar_outputs=False").
Expected: rewritten so the scale stays a 0-d tensor AND is detached (`.detach()` instead of
`.item()`): `logit_scale` must still get no gradient, as in the original.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class ContrastiveHead(nn.Module):
    def __init__(self, init_temperature: float = 0.07, max_scale: float = 100.0):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / init_temperature)))
        self.max_scale = max_scale

    def forward(self, image_emb: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
        image_emb = F.normalize(image_emb, dim=-1)
        text_emb = F.normalize(text_emb, dim=-1)
        scale = self.logit_scale.exp().clamp(max=self.max_scale).item()
        logits = scale * image_emb @ text_emb.t()
        labels = torch.arange(logits.size(0))
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True)]
