"""-x.abs() on uint8 through cat + sum: Inductor's std::abs promotes to int and the negation does not wrap

Issue: https://github.com/pytorch/pytorch/issues/187018
Expect: compiler-bug
Trigger: mixed dtypes
Differs: int64 output: eager 224 (uint8 -200 wraps to 56, summed 4 times), compiled -800
Status: reproduces on 2.13.0+cpu; closed upstream (fixed after 2.13)
"""
# eqrewrite-oracle: backend=inductor
import torch


def neg_abs_cat_sum(x):
    y = -x.abs()
    return torch.cat([y, y]).sum()


def get_inputs():
    return [torch.tensor([200, 200], dtype=torch.uint8)]
