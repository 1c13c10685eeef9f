"""torch.ldexp(half, float32) returns float16 under Inductor, float32 eagerly

Issue: https://github.com/pytorch/pytorch/issues/197091
Expect: compiler-bug
Trigger: result dtype
Differs: result dtype: eager torch.float32, compiled torch.float16
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def ldexp_mixed(mantissa, exponent):
    return torch.ldexp(mantissa, exponent)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 4).half(), torch.randn(3, 4)]
