"""DYNAMIC-SHAPE DISPATCH, mixture-of-experts loop in the transformers 5.x form: experts
stored as 3-D weight parameters, a one-hot mask with a sentinel class (`num_experts + 1`),
the `nonzero()` hits unwrapped with `expert_idx[0]`, and a test skipping the sentinel.
Top-2 routing over 4 experts.

Breaks on torch 2.13: `.nonzero()` (dynamic shape), the data-dependent test
`expert_idx == self.num_experts` on a tensor, and the one-argument `torch.where`.
Expected: rewritten: traced, every expert is visited as a Python int, runs on every token,
and `torch.where` keeps the routed rows before `index_add_` (4 experts / top 2 = 2x).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"
GRADIENTS = False  # the dense dispatch is inference-only (see moe-dense-dispatch)


class Experts(nn.Module):
    def __init__(self, hidden: int = 8, inner: int = 16, experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts, self.top_k = experts, top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.gate_up_proj = nn.Parameter(torch.randn(experts, 2 * inner, hidden) / 4)
        self.down_proj = nn.Parameter(torch.randn(experts, hidden, inner) / 4)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        router_logits = self.gate(hidden_states)
        top_k_weights, top_k_index = torch.topk(router_logits.softmax(-1), self.top_k, dim=-1)
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()

        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = self.act_fn(gate) * up
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            weighted = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, weighted.to(final_hidden_states.dtype))

        return final_hidden_states


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(10, 8)]


def get_init_inputs():
    torch.manual_seed(0)
    return []
