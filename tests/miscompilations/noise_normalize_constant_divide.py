"""centre a constant row, then divide by the clamped magnitude: the residual is pure rounding noise, amplified by 1e6

Issue: none (constructed: x - x.mean() of a constant is 0 mathematically; eager and Inductor reduce in different orders and leave different ~1e-9 residues, which y / |y|.clamp(min=1e-6) blows up; same mechanism maintainers closed as won't-fix in https://github.com/pytorch/pytorch/issues/188432, "an amplification artifact rather than evidence of a compiler bug")
Expect: numerical-noise
Trigger: optimisation sequence
Differs: output float32: 148 of 148 values differ (max abs diff 1.5e-2) although both are rounding residues of an exact 0; both are 7.5e-3 away from a float64 run
Status: reproduces on 2.13.0+cpu
"""
# eqrewrite-oracle: backend=inductor
import torch


def centred_ratio(x):
    y = x - x.mean(dim=-1, keepdim=True)
    return y / y.abs().clamp(min=1e-6)


def get_inputs():
    return [torch.full((4, 37), 0.1)]
