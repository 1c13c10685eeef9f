"""DYNAMIC-SHAPE DISPATCH (negative), the same mixture-of-experts loop, but the loop's own
variable `current_hidden_states` is read after the loop (the last expert's output is
returned too), so skipping the loop body when traced would change the result.

Breaks on torch 2.13: `.nonzero()`, the tensor index into the ModuleList, `torch.where`.
Expected: unchanged.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "unchanged"
GRADIENTS = False  # the dense dispatch is inference-only (see moe-dense-dispatch)


class SparseMoeBlock(nn.Module):
    def __init__(self, hidden: int = 8, experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts, self.top_k = experts, top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, 16), nn.SiLU(), nn.Linear(16, hidden))
            for _ in range(experts))

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
            device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)

        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            # gather the tokens routed to this expert, weigh their outputs
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim), (
            current_hidden_states)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 5, 8)]
