"""SELECT with calls, `if c: return self.a(x) else: return self.b(x)` calling methods.
LLM.int8()-style linear: take the mixed-precision outlier path only when some activation
exceeds the outlier threshold, else the plain fake-int8 path.

Breaks on torch 2.13: `if x.abs().amax() > self.threshold:` ("Data-dependent branching").
Expected: rewritten to torch.cond (branches call methods); both paths return (B, T, out).
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class OutlierAwareLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, threshold: float = 3.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.threshold = threshold

    def _fake_int8_matmul(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-5) / 127.0
        return ((x / scale).round() * scale) @ self.weight.t()

    def _outlier_matmul(self, x: torch.Tensor) -> torch.Tensor:
        cols = (x.abs() > self.threshold).any(dim=0).any(dim=0)
        regular = x.masked_fill(cols, 0.0)
        outliers = x - regular
        return self._fake_int8_matmul(regular) + outliers @ self.weight.t()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.abs().amax() > self.threshold:
            return self._outlier_matmul(x)
        else:
            return self._fake_int8_matmul(x)


def get_init_inputs():
    return [16, 8]


def get_inputs():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    x[:, :, 3] *= 6.0
    return [x]
