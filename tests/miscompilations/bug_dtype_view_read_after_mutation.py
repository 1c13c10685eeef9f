"""a value computed from a dtype view of the input is evaluated after a later in-place write to that input

Issue: https://github.com/pytorch/pytorch/issues/198101
Expect: compiler-bug
Trigger: aliased mutation
Differs: int64 output: 11 of 24 elements differ (computed from the mutated input); the mutated input itself matches
Status: reproduces on 2.13.0+cpu; open upstream (reported on CUDA, same on CPU)
"""
# eqrewrite-oracle: backend=inductor
import torch


def view_then_mutate(x):
    y = x.view(torch.int32) * 2     # reads x (as int32 pairs) into a fresh tensor
    y.sub_(-4)                      # in-place update of the intermediate
    x[:, 2:5] = 2                   # mutate the input afterwards
    return y.view(torch.int64)      # must reflect x before the mutation


def get_inputs():
    return [torch.arange(-12, 12, dtype=torch.int64).reshape(4, 6)]
