"""Top-2 mixture-of-experts feed-forward (Mixtral style), with what real implementations
carry around the routing: a load print for debugging, a capacity warning, an expert loop that
gathers each expert's tokens with torch.where, and an auxiliary loss kept as a Python float."""

import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
__eqrewrite_target__ = "MoeFeedForward"


class Expert(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoeFeedForward(nn.Module):
    def __init__(self, dim: int = 32, hidden: int = 64, num_experts: int = 4, top_k: int = 2,
                 capacity_factor: float = 1.25):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.capacity_factor = capacity_factor
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(num_experts))
        self.aux_loss = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        tokens = x.reshape(-1, C)
        probs = self.router(tokens).softmax(dim=-1)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        load = F.one_hot(chosen, self.num_experts).sum(dim=(0, 1))
        print("tokens per expert:", load)
        capacity = self.capacity_factor * tokens.shape[0] * self.top_k / self.num_experts
        if load.max() > capacity:
            logger.warning("an expert is over capacity: %s tokens", load.max())
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            out.index_add_(0, rows, expert(tokens[rows]) * weights[rows, slot, None])
        share = load.float() / load.sum()
        self.aux_loss = (share * probs.mean(dim=0)).sum().item() * self.num_experts
        return out.reshape(B, T, C)


def get_init_inputs():
    return [32, 64, 4, 2]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 6, 32)]
