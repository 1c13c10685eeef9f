"""Class-balanced focal loss with label smoothing (Lin et al. 2017, Cui et al. 2019):
per-class weights (1 - beta) / (1 - beta ** n_c), modulating factor (1 - p_t) ** gamma."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ClassBalancedFocalLoss(nn.Module):
    def __init__(self, samples_per_class: list, gamma: float = 2.0, beta: float = 0.999,
                 smoothing: float = 0.1):
        super().__init__()
        self.gamma = gamma
        self.smoothing = smoothing
        counts = torch.tensor(samples_per_class, dtype=torch.float32)
        effective_num = 1.0 - beta ** counts
        weights = (1.0 - beta) / effective_num
        weights = weights / weights.sum() * len(samples_per_class)
        self.register_buffer("class_weights", weights)

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        num_classes = logits.size(-1)
        log_probs = F.log_softmax(logits, dim=-1)
        probs = log_probs.exp()
        one_hot = F.one_hot(target, num_classes).to(logits.dtype)
        soft_target = one_hot * (1 - self.smoothing) + self.smoothing / num_classes

        pt = (probs * one_hot).sum(dim=-1)
        focal = (1 - pt) ** self.gamma
        ce = -(soft_target * log_probs).sum(dim=-1)

        w = self.class_weights[target]
        loss = w * focal * ce
        return loss.sum() / w.sum()


def get_init_inputs():
    return [[500, 120, 40, 8, 2]]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(8, 5), torch.randint(0, 5, (8,))]
