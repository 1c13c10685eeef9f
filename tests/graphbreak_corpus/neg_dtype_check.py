"""NEGATIVE, static condition on dtypes. T5's RMS layer norm (T5LayerNorm): variance in
float32, cast back to the weight dtype when the weight is half precision.

Does not break on torch 2.13: `if self.weight.dtype in [...]` compares dtypes, known at trace
time.
Expected: left alone: static condition (dtype).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


def get_init_inputs():
    return [16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 16)]
