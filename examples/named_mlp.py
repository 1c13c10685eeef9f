"""Configurable MLP built from a list of hidden sizes with generated layer names.
Its operators act on ints, strings and lists only (sizes, names, slicing offsets);
tensors are touched through calls alone, so the default pack must leave this file
unchanged."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class NamedMLP(nn.Module):
    def __init__(self, in_features: int, hidden_sizes: list, num_classes: int,
                 prefix: str = "layer"):
        super().__init__()
        sizes = [in_features] + list(hidden_sizes) + [num_classes]
        self.layer_names = []
        for i in range(len(sizes) - 1):
            name = prefix + "_" + str(i)
            self.add_module(name, nn.Linear(sizes[i], sizes[i + 1]))
            self.layer_names.append(name)
        self.num_layers = len(self.layer_names)
        self.split = num_classes // 2
        self.tag = "%s_x%d" % (prefix, self.num_layers)
        self.pad = [0, 0] * 2
        if not self.layer_names:
            raise ValueError("no layers for " + repr(self.tag))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        features = x.numel() // batch
        x = x.reshape(batch, features)
        for index, name in enumerate(self.layer_names):
            x = getattr(self, name)(x)
            if index < self.num_layers - 1:
                x = F.relu(x)
        last = x.size(-1) - 1
        head = x[:, : self.split]
        tail = x[:, self.split : last + 1]
        return torch.cat([tail, head], dim=-1)


def get_init_inputs():
    return [12, [32, 16], 6]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 3, 4)]
