"""(x @ w).to(bfloat16) + fp32 bias: Inductor elides the bf16 rounding of the matmul result, eager keeps it

Issue: https://github.com/pytorch/pytorch/issues/181568
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output float32 y: 510 of 510 values differ, 507 beyond tolerance (max abs diff 0.031); y.mean(-1): 28 of 30 beyond tolerance (max abs diff 0.0046); input gradients likewise. A float64 run without the bf16 rounding is within 3.2e-6 of compiled and 0.031 of eager
Status: reproduces on 2.13.0+cpu with the report's settings; closed upstream after the maintainers' PT2 Repro Agent (posted by karthickai) classified it PREDEFINED_MITIGATION: "TORCHINDUCTOR_EMULATE_PRECISION_CASTS=1 reduces max_abs_diff to 0.0 ... so the documented emulate_precision_casts mitigation fixes the divergence" (same mechanism jansel called intended in #183761); no closing comment beyond that was found
"""
# eqrewrite-oracle: backend=inductor fullgraph=true dynamic=true
import torch


def matmul_bf16_cast_add(x, w, b):
    y = (x @ w).to(torch.bfloat16) + b
    return y, y.mean(-1)


def get_inputs():
    g = torch.Generator().manual_seed(119)
    x = torch.randn(2, 15, 32, generator=g)
    w = torch.randn(32, 17, generator=g)
    b = torch.randn(17, generator=g)
    return [x, w, b]
