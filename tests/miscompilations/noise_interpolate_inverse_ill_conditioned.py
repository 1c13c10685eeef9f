"""inverse of a bilinearly upsampled (rank-deficient) matrix: rounding noise in the interpolation is amplified by ~1e7

Issue: https://github.com/pytorch/pytorch/issues/150165
Expect: numerical-noise
Trigger: interpolation
Differs: output float32: all 12288 values differ (max abs diff 5.4e7); the matrix is singular to working precision: eager and compiled are both ~1.6e17 away from a float64 run
Status: reproduces on 2.13.0+cpu; open upstream, a maintainer answered: "This is another case of torch.compile being more accurate than eager" (checked with torch._dynamo.utils.same against a float64 reference)
"""
# eqrewrite-oracle: backend=inductor
import torch
import torch.nn.functional as F


class Repro(torch.nn.Module):
    def forward(self, x):
        x = F.interpolate(x, size=(64, 64), mode="bilinear", align_corners=True)
        return torch.inverse(x)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(1, 3, 32, 32)]
