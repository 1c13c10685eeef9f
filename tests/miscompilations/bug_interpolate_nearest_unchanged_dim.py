"""interpolate(mode='nearest') resamples a dimension whose size is unchanged by a non-unit scale_factor

Issue: https://github.com/pytorch/pytorch/issues/198201
Expect: compiler-bug
Trigger: interpolation
Differs: output float32: 12 of 18 values differ (eager source rows [0,1,2], compiled [0,0,1]); max abs diff 4
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


def nearest_resize(z):
    # H: 3 -> floor(3*1.3) = 3 (unchanged), W: 4 -> floor(4*1.5) = 6
    return F.interpolate(z, scale_factor=(1.3, 1.5), mode="nearest")


def get_inputs():
    return [torch.arange(12, dtype=torch.float32).reshape(1, 1, 3, 4)]
