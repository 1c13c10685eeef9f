"""torch.compile (backend=inductor, inductor.freezing=True, under torch.no_grad()) raises
where eager runs: an int8 matmul with an int8 buffer as its right operand. The freezing pass
packs the constant operand as an MKL linear weight, which must be floating point:
"RuntimeError: reorder_linear_weight: weight's dtype should be float".

Found by eqrewrite's generator with varied compile settings (seed 97, program.py beside
this file). Prints both outcomes; exits 1 while compiling raises, 0 once it is fixed.
"""
import sys

import torch
import torch._inductor.config as inductor_config


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randint(-3, 4, (8, 3)).to(torch.int8))

    def forward(self, x):
        return torch.matmul(x, self.w)


torch.manual_seed(0)
module = M().eval()
x = torch.randint(-8, 9, (1, 8), dtype=torch.int8)
print("eager:   ", module(x))
inductor_config.freezing = True
try:
    with torch.no_grad():
        print("compiled:", torch.compile(module)(x))
except Exception as error:  # noqa: BLE001 - the crash is the finding
    print("compiled raised:", type(error).__name__, str(error).splitlines()[1])
    sys.exit(1)
