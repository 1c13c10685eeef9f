"""_foreach_add_([x], [x.flip(0)]) reads x while writing it under Inductor

Issue: https://github.com/pytorch/pytorch/issues/198033
Expect: compiler-bug
Trigger: aliased mutation
Differs: output (and mutated input) float32: 32 of 64 values differ (max abs diff ~1)
Status: reproduces on 2.13.0+cpu; open upstream (high priority)
"""
# eqrewrite-oracle: backend=inductor
import torch


def foreach_add_flip(x):
    torch._foreach_add_([x], [x.flip(0)])
    return x


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(8, 8)]
