"""clamp of an int8 tensor with a bound outside int8 wraps the bound under Inductor

Issue: https://github.com/pytorch/pytorch/issues/198071
Expect: compiler-bug
Trigger: integer overflow
Differs: eager raises RuntimeError ("value cannot be converted to type int8_t without overflow"), compiled returns [-24, -24, -24, -24, -24] (1000 wrapped to int8)
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor raises=true
import torch


def clamp_wide(t):
    return torch.clamp(t, -1000, 1000)


def get_inputs():
    return [torch.tensor([-128, -3, 0, 5, 127], dtype=torch.int8)]
