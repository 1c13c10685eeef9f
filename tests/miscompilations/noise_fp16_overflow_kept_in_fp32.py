"""fp16 x*x overflows to inf eagerly; Inductor keeps the product in fp32 registers so (x*x)/x stays finite

Issue: https://github.com/pytorch/pytorch/issues/183607
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output float16 y/x: inf positions differ at 40 of 40 (eager inf, compiled 300.0 = the float64 value)
Note: the report's reproducer also returns isinf(y), which differs too (a bool output, compared
exactly, so by the oracle's rules a compiler-bug: compiled says "not inf" for a y it returns as
inf); this control keeps only the floating result the report is about
Status: reproduces on 2.13.0+cpu; open upstream. Maintainers' follow-up (#183639) keeps the default compute-type behaviour and makes only emulate_precision_casts exact; compiled matches the float64 reference here
"""
# eqrewrite-oracle: backend=inductor
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        y = x * x
        return y / x


def get_inputs():
    return [torch.full((40,), 300.0, dtype=torch.float16)]
