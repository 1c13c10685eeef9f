"""floor_divide on a transposed input returns contiguous strides under torch.compile, the input's layout eagerly

Issue: https://github.com/pytorch/pytorch/issues/198364
Expect: compiler-bug
Trigger: layout
Differs: output strides: eager (1, 5), compiled (6, 1); values equal
Status: reproduces on 2.13.0+cpu; open upstream (also copysign, div(rounding_mode="floor"), addr(beta=0), put)
"""
# eqrewrite-oracle: backend=inductor
import torch


def floor_div(a, b):
    return torch.floor_divide(a, b)


def get_inputs():
    torch.manual_seed(0)
    a = torch.rand(6, 5).mT          # shape (5, 6), strides (1, 5)
    b = torch.rand(5, 6) + 1
    return [a, b]
