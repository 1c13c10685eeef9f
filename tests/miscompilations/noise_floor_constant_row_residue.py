"""floor(x - x.mean()) of a constant row: the floor of a rounding residue of an exact 0, where eager's residue happens to fall on the exact side and Inductor's does not

Issue: none (constructed: same mechanism as https://github.com/pytorch/pytorch/issues/188432, closed as won't-fix)
Expect: numerical-noise
Trigger: optimisation sequence
Differs: output float32: 148 of 148 values differ by 1 (eager 0, compiled -1); a float64 run gives eager's 0, but that answer is a tie decided by rounding: with the inputs nudged by 1 ± 2**-40 it gives -1 at some of them (the integer-jump rule's control for a reference that sides with eager)
Status: reproduces on 2.13.0+cpu
"""
# eqrewrite-oracle: backend=inductor
import torch


def floor_of_residue(x):
    return torch.floor(x - x.mean(dim=-1, keepdim=True))


def get_inputs():
    return [torch.full((4, 37), 0.7)]
