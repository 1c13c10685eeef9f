"""FOLD, one test combining two 0-d flags with `or`. A DETR-style encoder layer (DETR,
RT-DETR, Grounding DINO, OmDet-Turbo in transformers 4.x) clamps its activations when any
is infinite or NaN.

Breaks on torch 2.13: `torch.isinf(h).any() or torch.isnan(h).any()` takes the truth of
each flag ("Data-dependent branching"), twice when the first is false.
Expected: `torch.isinf(h).any() | torch.isnan(h).any()`, one read (one break left); same
outputs.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"
BREAKS_AFTER = 1


class EncoderLayer(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.fc2(torch.relu(self.fc1(hidden_states)))
        hidden_states = residual + hidden_states
        if torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 8)]
