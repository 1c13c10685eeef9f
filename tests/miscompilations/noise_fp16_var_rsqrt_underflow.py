"""fp16 var + rsqrt: eager underflows 1e-9 to 0 in fp16 and returns 0 * inf = NaN, Inductor keeps fp32 and returns 0

Issue: https://github.com/pytorch/pytorch/issues/183605
Expect: numerical-noise
Trigger: NaN/inf/signed zero
Differs: output float16: NaN positions differ at 15 of 15 (eager NaN everywhere, compiled 0.0 everywhere; a float64 run gives 0.0)
Status: reproduces on 2.13.0+cpu; closed upstream. Compiled is the one that matches the float64 reference: the difference comes from Inductor computing fp16 pointwise chains in fp32 (see #183761, closed as intended)
"""
# eqrewrite-oracle: backend=inductor
import torch


class Repro(torch.nn.Module):
    def forward(self, x):
        var = x.var(dim=-1, keepdim=True)
        return x * torch.rsqrt(var + 1e-9)


def get_inputs():
    return [torch.full((3, 5), 1e-10, dtype=torch.float16)]
