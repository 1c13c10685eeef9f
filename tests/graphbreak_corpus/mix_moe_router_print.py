"""MIX, DEFER inside an MoE router. Top-2 mixture of experts computed densely (every expert
on every token, combined with the routing weights), printing the per-expert token load.

Breaks on torch 2.13: `print(...)` ("Failed to trace builtin operator"). The load is counted
with one_hot(...).sum(), which has a static shape and does not break.
Expected: rewritten so the print is deferred after the graph with the same text (an int64
tensor, no grad_fn) and the same outputs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class DenseTop2MoE(nn.Module):
    def __init__(self, dim: int, num_experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        router_logits = self.gate(x)
        weights, selected = router_logits.softmax(dim=-1).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        load = F.one_hot(selected, self.num_experts).sum(dim=(0, 1))
        print("tokens per expert:", load)
        combine = torch.zeros_like(router_logits).scatter(-1, selected, weights)
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=-2)
        return (combine.unsqueeze(-1) * expert_out).sum(dim=-2)


def get_init_inputs():
    return [8, 4]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(10, 8)]
