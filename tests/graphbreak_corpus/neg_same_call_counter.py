"""SELECT, same call after a preparation that is not a cache: one branch counts how often
the long table was taken (`self.long_calls = self.long_calls + 1`). Running both branches'
preparations when traced would count every call, so the rewrite must not apply.

Breaks on torch 2.13 ("Data-dependent branching" on `if seq_len > self.limit:`).
Expected: unchanged (the counter is neither a lazy initialisation nor a refresh).
"""

import torch
import torch.nn as nn

EXPECTED = "unchanged"


class CountedTable(nn.Module):
    def __init__(self, hidden: int = 8):
        super().__init__()
        self.limit = 8
        self.long_calls = 0
        self.short = torch.linspace(0.0, 1.0, hidden)
        self.long = torch.linspace(0.0, 2.0, hidden)
        self.register_buffer("table", self.short, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.limit:
            self.long_calls = self.long_calls + 1
            self.register_buffer("table", self.long, persistent=False)
        else:
            self.register_buffer("table", self.short, persistent=False)
        return x * self.table


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 12, 8), torch.arange(12).expand(2, 12)]
