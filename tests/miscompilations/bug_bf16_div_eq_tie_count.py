"""bf16 division fused into an exact equality skips the bf16 rounding: scaled == scaled.amax() never holds, tie counts become 0

Issue: https://github.com/pytorch/pytorch/issues/195214
Expect: compiler-bug
Trigger: mixed dtypes
Differs: int64 output: tie count per row eager [1, 1, 1, 1], compiled [0, 0, 0, 0]
Status: reproduces on 2.13.0+cpu (reported on CUDA; the fix #195223 covers CPU bf16 too); closed upstream (fixed after 2.13). Same lowp-elision mechanism as the noise_fp16_* controls, but maintainers treated the discrete (boolean) consequence as a bug and fixed it
"""
# eqrewrite-oracle: backend=inductor
import math

import torch


def tie_count(x):
    scaled = x / math.sqrt(7.0)
    maximum = scaled.amax(dim=-1, keepdim=True)
    return (scaled == maximum).sum(dim=-1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 64, dtype=torch.bfloat16)]
