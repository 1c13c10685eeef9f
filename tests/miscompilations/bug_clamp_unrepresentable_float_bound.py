"""clamp with a bound beyond float32 range raises eagerly, is silently ignored under torch.compile

Issue: https://github.com/pytorch/pytorch/issues/195675
Expect: compiler-bug
Trigger: boundary values
Differs: eager raises RuntimeError ("value cannot be converted to type float without overflow"), compiled returns x unchanged
Status: reproduces on 2.13.0+cpu; open upstream (fix proposed in #196114)
"""
# eqrewrite-oracle: backend=inductor raises=true
import torch


def clamp_huge(x):
    return torch.clamp(x, min=-3.4e39, max=3.4e39)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4)]
