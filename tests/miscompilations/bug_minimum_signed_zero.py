"""torch.minimum(-0.0, 0.0) returns +0.0 under Inductor on CPU, -0.0 eagerly

Issue: https://github.com/pytorch/pytorch/issues/194347
Expect: compiler-bug
Trigger: NaN/inf/signed zero
Differs: output float32: sign bit of the zero differs at 1 of 1 (eager -0.0, compiled +0.0); equal as values
Status: reproduces on 2.13.0+cpu; open upstream (the CUDA path was fixed in #185610)
"""
# eqrewrite-oracle: backend=inductor strict=true
import torch


def minimum_of(x, y):
    return torch.minimum(x, y)


def get_inputs():
    return [torch.tensor([-0.0]), torch.tensor([0.0])]
