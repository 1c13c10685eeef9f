"""sqrt of negative inputs gives a NaN with the sign bit set under Inductor (0xffc00000), a positive NaN eagerly

Issue: https://github.com/pytorch/pytorch/issues/189808
Expect: compiler-bug
Trigger: NaN/inf/signed zero
Differs: output float32: NaN positions equal, NaN sign bit differs at 12 of 16; visible downstream (copysign(1, sqrt(x)) gives -1 compiled, +1 eager)
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor strict=true
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        return torch.sqrt(x)


def get_inputs():
    return [torch.tensor([-1.0, -2.0, 4.0, -0.5] * 4)]
