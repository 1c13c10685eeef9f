"""torch.where(y > 0, 1, -1) on y = x - mean(x) of a constant row: the branch is decided by the sign of a rounding residue

Issue: none (constructed: y is 0 mathematically; which side of 0 the float32 residue falls on depends on the reduction order, which Inductor is free to change; same mechanism as https://github.com/pytorch/pytorch/issues/188432, closed as won't-fix)
Expect: numerical-noise
Trigger: optimisation sequence
Differs: output float32: 148 of 148 values differ by 2 (eager and compiled residues have opposite signs); compiled happens to match a float64 run
Status: reproduces on 2.13.0+cpu
"""
# eqrewrite-oracle: backend=inductor
import torch


def sign_of_residue(x):
    y = x - x.mean(dim=-1, keepdim=True)
    return torch.where(y > 0, torch.ones_like(y), -torch.ones_like(y))


def get_inputs():
    return [torch.full((4, 37), 0.1)]
