"""DYNAMIC-SHAPE DISPATCH that is not row-wise: each expert centres its routed tokens on
their mean (a reduction over the routed rows), so running the expert on every token would
change the values of the routed ones.

Breaks on torch 2.13: the one-argument `torch.where` (dynamic shape).
Expected: unchanged (the moe kind notes that the centring statement is not row-wise).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "unchanged"
GRADIENTS = False  # the dense dispatch is inference-only (see moe-dense-dispatch)


class CenteredMoe(nn.Module):
    def __init__(self, hidden: int = 8, experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts, self.top_k = experts, top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(experts))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        weights, selected = torch.topk(self.gate(hidden_states).softmax(-1), self.top_k, dim=-1)
        expert_mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        final = torch.zeros_like(hidden_states)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[top_x]
            current_state = current_state - current_state.mean(0)
            current_state = self.experts[expert_idx](current_state)
            final.index_add_(0, top_x, current_state * weights[top_x, idx, None])
        return final


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(10, 8)]


def get_init_inputs():
    torch.manual_seed(0)
    return []
