"""SCALARS, `.item()` feeding only tensor arithmetic. Dynamic per-tensor symmetric int8 fake
quantization: the scale is read out as a Python float.

Breaks on torch 2.13: `.item()` ("Unsupported Tensor.item() call with
capture_scalar_outputs=False"); `fullgraph=True` alone may pass since it turns scalar capture
on, but explain shows two graphs.
Expected: rewritten so `scale` stays a 0-d tensor (drop `.item()`). Note the Python float is
computed in float64 (`amax / 127.0`) while the 0-d tensor stays float32: results may differ in
the last ulp.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class DynamicFakeQuant(nn.Module):
    def __init__(self, num_bits: int = 8):
        super().__init__()
        self.qmax = 2 ** (num_bits - 1) - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.detach().abs().amax().item() / self.qmax
        q = torch.clamp(torch.round(x / scale), -self.qmax - 1, self.qmax)
        return q * scale


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 16)]
