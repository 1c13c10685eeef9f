"""sinh of float32 inputs near the overflow boundary returns inf under Inductor, finite eagerly

Issue: https://github.com/pytorch/pytorch/issues/183763
Expect: compiler-bug
Trigger: boundary values
Differs: output float32: inf positions differ at 16 of 16 (eager finite ~2e38, compiled +-inf); the vectorised Sleef sinhf overflows in its exp
Status: reproduces on 2.13.0+cpu; closed upstream (fix #184359 after 2.13)
"""
# eqrewrite-oracle: backend=inductor fullgraph=true
import torch


def sinh_near_overflow(x):
    return torch.sinh(x)


def get_inputs():
    return [torch.tensor([88.85, 89.2, 88.95, -89.0] * 4, dtype=torch.float32)]
