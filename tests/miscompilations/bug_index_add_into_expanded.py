"""index_add into an expanded (stride-0) tensor is reinplaced and accumulates into the shared row

Issue: https://github.com/pytorch/pytorch/issues/183986
Expect: compiler-bug
Trigger: aliased mutation
Differs: output float32: eager rows [1, 1, 0, 0], compiled rows [2, 2, 2, 2] (32 of 32 values differ)
Status: reproduces on 2.13.0+cpu; closed upstream (fix #184488 after 2.13)
"""
# eqrewrite-oracle: backend=inductor
import torch


def index_add_expanded(idx, src):
    base = torch.zeros(1, 8).expand(4, -1)      # 4 logical rows sharing one physical row
    return base.index_add(0, idx, src)


def get_inputs():
    return [torch.tensor([0, 1]), torch.ones(2, 8)]
