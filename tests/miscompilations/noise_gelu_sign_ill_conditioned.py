"""sign(gelu(x)) near x = -5.53: eager gelu gives -0.0, Inductor's vectorised erf a tiny negative, sign() turns it into 0 vs -1

Issue: https://github.com/pytorch/pytorch/issues/189804
Expect: numerical-noise
Trigger: NaN/inf/signed zero
Differs: output float32: 16 of 16 values differ by 1 (eager sign(-0.0) = -0.0, compiled sign(-1.65e-7) = -1); the gelu values differ by ~1.7e-7 absolute, far inside rounding; compiled matches a float64 run (sign -1)
Status: reproduces on 2.13.0+cpu; closed upstream as not planned (maintainer: "very ill-conditioned input (GELU followed by sign) ... doesn't really represent an accuracy problem"; the reporter agreed)
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


class Repro(torch.nn.Module):
    def forward(self, x):
        return torch.sign(F.gelu(x))


def get_inputs():
    return [torch.tensor([-5.533906936645508, -5.531643390655518] * 8, dtype=torch.float32)]
