"""DYNAMIC-SHAPE DISPATCH, top-1 mixture-of-experts in the Switch Transformers / NLLB-MoE
form (transformers 4.x and 5.x): experts held as `expert_{i}` submodules looked up by the
hit's number (`self[f"expert_{expert_idx[0]}"]`), the mask indexed by the nonzero row and
squeezed (`expert_mask[expert_idx].squeeze(0)`), one slot per token.

Breaks on torch 2.13: `.nonzero()` (dynamic shape), the f-string over a tensor element and
the one-argument `torch.where`.
Expected: rewritten: traced, every expert (4 experts / top 1 = 4x, at the bound) runs on
every token and `torch.where` keeps the routed rows.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"
GRADIENTS = False  # the dense dispatch is inference-only (see moe-dense-dispatch)


class SwitchExperts(nn.ModuleDict):
    def __init__(self, hidden: int = 8, experts: int = 4):
        super().__init__({f"expert_{i}": nn.Sequential(nn.Linear(hidden, 16), nn.ReLU(),
                                                       nn.Linear(16, hidden))
                          for i in range(experts)})
        self.num_experts = experts

    def forward(self, hidden_states: torch.Tensor, selected_experts: torch.Tensor,
                routing_weights: torch.Tensor) -> torch.Tensor:
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_states.shape[-1])
            current_hidden_states = (self[f"expert_{expert_idx[0]}"](current_state)
                                     * routing_weights[top_x, idx, None])
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states


def get_inputs():
    torch.manual_seed(0)
    hidden = torch.randn(7, 8)
    selected = torch.tensor([[0], [2], [2], [1], [0], [2], [1]])  # expert 3 gets no token
    return [hidden, selected, torch.rand(7, 1)]


def get_init_inputs():
    torch.manual_seed(0)
    return []
