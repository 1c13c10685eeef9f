"""vectorised float64 acosh returns inf above 1.34e154 under Inductor (SLEEF squares its argument)

Issue: https://github.com/pytorch/pytorch/issues/198134
Expect: compiler-bug
Trigger: boundary values
Differs: output float64: inf positions differ at 16 of 16 (eager 461.21, compiled inf)
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def acosh_large(x):
    return torch.acosh(x)


def get_inputs():
    return [torch.full((16,), 1e200, dtype=torch.float64)]
