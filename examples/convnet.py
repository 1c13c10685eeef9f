"""Small CIFAR-style CNN: input normalisation, conv/batchnorm/relu stem with max
pooling, one residual basic block, global average pooling and a linear head."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallConvNet(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 16):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1))
        self.conv0 = nn.Conv2d(in_channels, width, kernel_size=3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(width)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv1 = nn.Conv2d(width, width, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        x = self.pool(F.relu(self.bn0(self.conv0(x))))

        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        out = F.relu(out)

        out = F.adaptive_avg_pool2d(out, 1)
        out = torch.flatten(out, 1)
        return self.fc(out)


def get_init_inputs():
    return [3, 10, 16]


def get_inputs():
    torch.manual_seed(0)
    return [torch.rand(2, 3, 16, 16)]
