"""subtracting a bool tensor raises eagerly but is silently evaluated under torch.compile

Issue: https://github.com/pytorch/pytorch/issues/195674
Expect: compiler-bug
Trigger: mixed dtypes
Differs: eager raises RuntimeError ("Subtraction, the `-` operator, with a bool tensor is not supported"), compiled returns an int64 tensor
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor raises=true
import torch


def one_minus_mask(x):
    return 1 - (x < 0)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4)]
