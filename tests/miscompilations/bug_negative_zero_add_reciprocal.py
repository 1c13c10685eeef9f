"""ceil(x) + zeros_like keeps -0.0 under Inductor, so reciprocal gives -inf instead of +inf

Issue: https://github.com/pytorch/pytorch/issues/189799
Expect: compiler-bug
Trigger: NaN/inf/signed zero
Differs: output float32: sign of inf differs at 3 of 3 (eager [inf, inf, inf], compiled [-inf, -inf, -inf])
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        v = torch.ceil(x)                        # ceil(-0.5) = -0.0
        v = torch.add(v, torch.zeros_like(v))    # -0.0 + 0.0 = +0.0 in IEEE arithmetic
        return torch.reciprocal(v)               # +inf eagerly


def get_inputs():
    return [torch.tensor([-0.5, -0.1, -0.9])]
