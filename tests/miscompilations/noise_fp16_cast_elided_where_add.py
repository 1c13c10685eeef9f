"""explicit float16 casts before an add are elided by Inductor (fp32 opmath), so the fp16 sum rounds once instead of twice

Issue: https://github.com/pytorch/pytorch/issues/182131
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output float16 y: 3 of 24 values differ by 9.8e-4 (1 fp16 ulp); float32 sum differs by 3.9e-4; a float64 run keeps the explicit casts and equals eager
Status: reproduces on 2.13.0+cpu with default settings; closed upstream. The same pattern (#183761, where + full_like + cast + add) was closed by a maintainer as intended: "By default Inductor may elide fp16/bf16 downcast-upcast pairs across fused pointwise ops ... The exact-eager mode is TORCHINDUCTOR_EMULATE_PRECISION_CASTS=1"
"""
# eqrewrite-oracle: backend=inductor fullgraph=true
import torch


def where_cast_add(x, c):
    z = torch.where(c, torch.full_like(x, 0.5), torch.full_like(x, -0.5))
    y = z.to(torch.float16) + x.to(torch.float16)
    return y, y.float().sum()


def get_inputs():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 10
    c = (torch.arange(24) % 5 == 0).reshape(2, 3, 4)
    return [x, c]
