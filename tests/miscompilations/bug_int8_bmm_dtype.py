"""int8 batched matmul returns int64 under Inductor on CPU instead of int8

Issue: https://github.com/pytorch/pytorch/issues/191308
Expect: compiler-bug
Trigger: result dtype
Differs: result dtype: eager torch.int8, compiled torch.int64 (values equal)
Status: reproduces on 2.13.0+cpu; open upstream
"""
# eqrewrite-oracle: backend=inductor fullgraph=true dynamic=false
import torch


def int8_matmul(a, b):
    return torch.matmul(a, b)


def get_inputs():
    return [torch.ones((1, 1, 2), dtype=torch.int8), torch.ones((1, 2, 2), dtype=torch.int8)]
