"""argmin over a transposed tensor after a pointwise op returns a wrong flat index

Issue: https://github.com/pytorch/pytorch/issues/197739
Expect: compiler-bug
Trigger: layout
Differs: int64 output: eager argmin 1, compiled 2 (index into the physical, not logical, order)
Status: reproduces on 2.13.0+cpu; open upstream (high priority, module: correctness (silent))
"""
# eqrewrite-oracle: backend=inductor
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        xt = x.t()
        out = xt + 0.5
        return out.argmin()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 2)]
