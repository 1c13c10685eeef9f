"""bf16 tensor + 0-dim float64 tensor: eager rounds -0.1 to bf16 first (0.1 - 0.1 = 0), Inductor adds it in fp32 (a bf16 residue)

Issue: https://github.com/pytorch/pytorch/issues/185605
Expect: numerical-noise
Trigger: mixed dtypes
Differs: output bfloat16: 1 of 6 values differs (index (0, 2): eager 0.0, compiled 9.775e-05); a float64 run gives 9.766e-05, so compiled is the correctly rounded sum
Status: reported on CUDA, reproduces on 2.13.0+cpu with default settings; closed upstream by a maintainer (eellison) with "Fixed with emulate precision casts." (the default behaviour is kept; TORCHINDUCTOR_EMULATE_PRECISION_CASTS=1 is the eager-exact mode)
"""
# eqrewrite-oracle: backend=inductor
import torch


def add_zero_dim_float64(x, s):
    return torch.add(x, s)


def get_inputs():
    x = torch.tensor([[0.0, 0.0, 0.1], [-0.2, 1.0, -1.0]], dtype=torch.bfloat16)
    s = torch.tensor(-0.1, dtype=torch.float64)
    return [x, s]
