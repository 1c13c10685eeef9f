"""adaptive_max_pool2d(return_indices=True) returns wrong indices for a transposed input

Issue: https://github.com/pytorch/pytorch/issues/197434
Expect: compiler-bug
Trigger: indexing
Differs: int64 indices: 27 of 32 differ (values identical)
Status: reproduces on 2.13.0+cpu; closed upstream (fixed after 2.13)
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


class Repro(torch.nn.Module):
    def forward(self, x):
        out = F.adaptive_max_pool2d(x, (2, 2), return_indices=True)
        return out[1]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 12, 12).transpose(2, 3)]
