"""DYNAMIC-SHAPE DISPATCH, mixture-of-experts loop in the DeepSeek-V3 / GLM-4-MoE form
(transformers 4.57): a helper method called from `forward`, the mask laid out
(experts, tokens, slots) so `torch.where` gives `(token, slot)`, a local alias of the
expert's mask and an `if token_indices.numel() > 0:` block. Top-2 routing over 4 experts;
one expert gets no token.

Breaks on torch 2.13: the one-argument `torch.where` (dynamic shape) and the test of the
number of selected tokens.
Expected: rewritten: traced, every expert runs on every token (the count test is then
static) and `torch.where` keeps the routed rows (4 experts / top 2 = 2x).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"
GRADIENTS = False  # the dense dispatch is inference-only (see moe-dense-dispatch)


class MoE(nn.Module):
    def __init__(self, hidden: int = 8, experts: int = 4, top_k: int = 2):
        super().__init__()
        self.top_k = top_k
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, 16), nn.GELU(), nn.Linear(16, hidden))
            for _ in range(experts))

    def moe(self, hidden_states: torch.Tensor, topk_indices: torch.Tensor,
            topk_weights: torch.Tensor) -> torch.Tensor:
        final_hidden_states = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
        expert_mask = F.one_hot(topk_indices, num_classes=len(self.experts))
        expert_mask = expert_mask.permute(2, 0, 1)

        for expert_idx in range(len(self.experts)):
            expert = self.experts[expert_idx]
            mask = expert_mask[expert_idx]
            token_indices, weight_indices = torch.where(mask)

            if token_indices.numel() > 0:
                expert_weights = topk_weights[token_indices, weight_indices]
                expert_input = hidden_states[token_indices]
                expert_output = expert(expert_input)
                weighted_output = expert_output * expert_weights.unsqueeze(-1)
                final_hidden_states.index_add_(0, token_indices, weighted_output)

        return final_hidden_states.type(hidden_states.dtype)

    def forward(self, hidden_states: torch.Tensor, topk_indices: torch.Tensor,
                topk_weights: torch.Tensor) -> torch.Tensor:
        return self.moe(hidden_states, topk_indices, topk_weights)


def get_inputs():
    torch.manual_seed(0)
    hidden = torch.randn(6, 8)
    # expert 3 gets no token
    indices = torch.tensor([[0, 1], [1, 2], [2, 0], [0, 2], [1, 0], [2, 1]])
    weights = torch.rand(6, 2)
    return [hidden, indices, weights / weights.sum(-1, keepdim=True)]


def get_init_inputs():
    torch.manual_seed(0)
    return []
