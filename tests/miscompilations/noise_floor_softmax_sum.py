"""floor(sum(softmax(x))): the sum is exactly 1 mathematically, each side's rounding decides whether the floor is 0 or 1

Issue: https://github.com/pytorch/pytorch/issues/189787
Expect: numerical-noise
Disputed: open upstream as a fuzzer report (labelled pt2: numerics-discrepancy, no maintainer verdict yet) that Inductor folds the sum to 1.0; the floored quantity is an exact 1 whose float32 residue decides the floor, the mechanism #188432 closed as won't-fix. The float64 reference sides with eager at some rows and with compiled at others, so it is no integer jump and the oracle files it as noise; it counts neither as a bug nor as a control
Trigger: optimisation sequence
Differs: output float32 (inference): 13 of 43 values differ by 1; a float64 run sides with eager at 6 and with compiled at 7
Status: reproduces on 2.13.0+cpu
"""
# eqrewrite-oracle: backend=inductor inference=true
import torch
import torch.nn.functional as F


class SubMod(torch.nn.Module):
    def forward(self, x):
        return torch.floor(torch.sum(F.softmax(x, dim=-1), dim=-1))


def get_inputs():
    torch.manual_seed(42)
    return [torch.randn(43, 59)]
