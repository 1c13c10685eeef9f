"""int64 arange times an int64 constant is computed in 32-bit under Inductor and wraps

Issue: https://github.com/pytorch/pytorch/issues/183901
Expect: compiler-bug
Trigger: integer overflow
Differs: int64 output: 7 of 9 differ (eager 3000000000, compiled -1294967296, ...)
Status: reproduces on 2.13.0+cpu (reported on CUDA; the CPU path wraps too); open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def arange_times_big(x):
    return torch.arange(0, 9, dtype=torch.int64) * torch.tensor([1500000000], dtype=torch.int64) + x


def get_inputs():
    return [torch.zeros(1, dtype=torch.int64)]
