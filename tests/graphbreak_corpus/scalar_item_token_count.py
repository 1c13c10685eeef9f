"""SCALARS, `.item()` feeding only tensor arithmetic. Causal-LM loss normalised by the number
of non-ignored tokens (Hugging Face's `num_items_in_batch` pattern).

Breaks on torch 2.13: `.item()` ("Unsupported Tensor.item() call with
capture_scalar_outputs=False").
Expected: rewritten so `num_tokens` stays a 0-d tensor; the loss value is unchanged.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = "rewrite"


class CausalLMLoss(nn.Module):
    def __init__(self, ignore_index: int = -100):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        shift_logits = logits[:, :-1, :].reshape(-1, logits.size(-1))
        shift_labels = labels[:, 1:].reshape(-1)
        num_tokens = (shift_labels != self.ignore_index).sum().item()
        loss = F.cross_entropy(shift_logits, shift_labels, ignore_index=self.ignore_index,
                               reduction="sum")
        return loss / num_tokens


def get_inputs():
    torch.manual_seed(0)
    labels = torch.randint(0, 11, (2, 8))
    labels[0, 5:] = -100
    return [torch.randn(2, 8, 11), labels]
