"""Floor division of a quotient just below an integer: Inductor floors the rounded quotient, so 1.0 // 0.1 gives 10 where eager and Python give 9

Issue: https://github.com/pytorch/pytorch/issues/197895
Expect: compiler-bug
Trigger: boundary values
Differs: output float32: 4 of 4 values differ by 1 (eager [9, 4, 29, 2], compiled [10, 5, 30, 3]); a float64 run gives eager's values (1.0 / float32(0.1) = 9.99999985) and keeps them with the inputs nudged by 1 ± 2**-40; every exact quotient lies within float32 rounding of an integer, so the perturbed eager runs flip too, and the oracle filed this as numerical-noise (excused by sensitivity) until it recognised integer jumps
Status: reproduces on 2.13.0+cpu; open upstream (module: correctness (silent), release triage); aot_eager matches eager: Inductor lowers floating floor division to floor(a / b) instead of eager's fmod-based algorithm
"""
# eqrewrite-oracle: backend=inductor
import torch


def bucket(a, b):
    return a // b


def get_inputs():
    return [torch.tensor([1.0, 0.5, 6.0, 1.0]), torch.tensor([0.1, 0.1, 0.2, 1 / 3])]
