"""DATA-DEPENDENT CHECK through a library helper, as transformers 5.x validates inputs: a
`torch_compilable_check`-style function that, given a tensor condition, calls
`torch._check_tensor_all_with(error_type, cond, message)`.

Breaks on torch 2.13: `torch._check_tensor_all_with` reads the condition with `.item()`.
Expected: rewritten: eagerly the same check (ValueError, same message); traced,
`torch._assert_async` inside the graph.
"""

import torch
import torch.nn as nn

EXPECTED = "rewrite"


def compilable_check(cond, msg, error_type=ValueError):
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, lambda: msg)
    else:
        torch._check_with(error_type, cond, lambda: msg)


class Embed(nn.Module):
    def __init__(self, vocab: int = 16, hidden: int = 8):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, hidden)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        compilable_check(input_ids < self.vocab, "token id out of range")
        return self.embed(input_ids).sum(-1)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randint(0, 16, (2, 5))]


def get_init_inputs():
    torch.manual_seed(0)
    return []
