"""interpolate(scale_factor=1.3, mode='nearest') picks the wrong source pixel under aot_eager/Inductor

Issue: https://github.com/pytorch/pytorch/issues/175154
Expect: compiler-bug
Trigger: interpolation
Differs: output float64: eager [1, 2], compiled [1, 1]
Status: reproduces on 2.13.0+cpu (inductor and aot_eager; the decomposition is at fault); open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


def nearest_upsample(x):
    return F.interpolate(x, scale_factor=1.3, mode="nearest")


def get_inputs():
    return [torch.tensor([[[[1.0, 2.0]]]], dtype=torch.float64)]
