"""atan2(x, y).amin(dim): forward matches, but Inductor's backward drops the gradient at one argmin position

Issue: https://github.com/pytorch/pytorch/issues/186799
Expect: compiler-bug
Trigger: reduction over non-contiguous
Differs: forward equal; x.grad float32 differs at 1 of 6 (eager -0.1366, compiled -0.0) for sum().backward()
Status: reproduces on 2.13.0+cpu; open upstream (only the gradient is wrong: an oracle that compares forward outputs alone sees nothing)
"""
# eqrewrite-oracle: backend=inductor
import torch


def atan2_amin(x, y):
    return torch.atan2(x, y).amin(dim=-1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 3), torch.randn(2, 3)]
