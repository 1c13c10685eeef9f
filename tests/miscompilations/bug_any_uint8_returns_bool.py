"""torch.any on a uint8 tensor returns bool under Inductor (uint8 eagerly), so later uint8 arithmetic no longer wraps

Issue: https://github.com/pytorch/pytorch/issues/198081
Expect: compiler-bug
Trigger: result dtype
Differs: result dtype and value: eager uint8 44 (1*200+100 wraps in uint8), compiled int64 300
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor
import torch


def any_times_200(x):
    return torch.any(x) * 200 + 100


def get_inputs():
    return [torch.tensor([[0, 3], [0, 0]], dtype=torch.uint8)]
