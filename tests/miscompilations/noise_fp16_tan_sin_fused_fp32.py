"""fp16 tan -> expand -> mean.item() branch -> sin: Inductor keeps the fused chain in fp32, eager rounds to fp16 between ops

Issue: https://github.com/pytorch/pytorch/issues/160730
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output float16: 256 of 1581 values differ (max abs diff 0.063) where tan is large and sin amplifies the rounding of its argument; against a float64 run eager max error 0.057, compiled 0.086 (neither side is clearly closer)
Status: reproduces on 2.13.0+cpu (with and without the switch); closed upstream, maintainer: "IMO this is expected because torch.compile fuses the ops and performs all the internal computations over float32 which results in more precise output than eager"
"""
# eqrewrite-oracle: backend=inductor dynamo.capture_scalar_outputs=true
import numpy as np
import torch


def tan_branch_sin(x):
    t = torch.tan(x)
    e = t.expand(31, 51, 1)
    mean_val = torch.mean(e)
    if mean_val.item() > 0.5:
        out1 = torch.sub(e, e * 0.5)
    else:
        out1 = torch.add(e, e * 0.5)
    return torch.sin(out1)


def get_inputs():
    rng = np.random.RandomState(0)
    return [torch.from_numpy(rng.uniform(0, 10, size=(31, 51, 1)).astype(np.float16))]
