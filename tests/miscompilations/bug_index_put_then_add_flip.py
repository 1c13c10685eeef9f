"""x.index_put_(...) then x.add_(x.flip(0)): the copy back into x is fused with a read of x elsewhere

Issue: https://github.com/pytorch/pytorch/issues/198270
Expect: compiler-bug
Trigger: aliased mutation
Differs: output (and mutated input) float32: 16 of 32 values differ (max abs diff ~1.9)
Status: reproduces on 2.13.0+cpu; open upstream (high priority)
"""
# eqrewrite-oracle: backend=inductor
import torch


def put_then_add_flip(x):
    x.index_put_((torch.arange(x.size(0)),), x * 2.0)
    x.add_(x.flip(0))
    return x


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(4, 8)]
