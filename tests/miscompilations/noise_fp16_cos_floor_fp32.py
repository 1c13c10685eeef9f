"""floor(cos(x)) in float16: eager rounds cos(x) to float16 first (up to 1.0 near 0), Inductor keeps it in float32 (0.9999...), so the floors are 1 and 0

Issue: https://github.com/pytorch/pytorch/issues/145466
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output float16: 16 of 1024 values differ by 1 (eager 1, compiled 0); a float64 run gives compiled's 0 at all 16: here eager is the side that jumped, by rounding the cosine to float16 (the integer-jump rule's control)
Status: reproduces on 2.13.0+cpu; closed upstream (no maintainer statement seen; the same float32-opmath mechanism maintainers call expected in #160730 and #183761)
"""
# eqrewrite-oracle: backend=inductor
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.floor(torch.cos(x))


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(32, 32, dtype=torch.float16)]
