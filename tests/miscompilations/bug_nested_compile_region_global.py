"""nested_compile_region reuses the first iteration's global instead of the re-assigned one

Issue: https://github.com/pytorch/pytorch/issues/191821
Expect: compiler-bug
Trigger: Python semantics/control flow
Differs: int64 output: eager 2, compiled 1 (second call of the region sees the stale global)
Status: reproduces on 2.13.0+cpu; closed upstream
"""
# eqrewrite-oracle: backend=inductor
from dataclasses import dataclass

import torch


@dataclass
class _RegionInput:
    hidden: torch.Tensor


region_input = _RegionInput(torch.tensor(0))


@torch.compiler.nested_compile_region
def _region():
    return region_input.hidden + 1


def iterate_region(hidden):
    global region_input
    for _ in range(2):
        region_input = _RegionInput(hidden)
        hidden = _region()
    return hidden


def get_inputs():
    return [torch.tensor(0)]
