"""DEFER, sys.stdout.write / sys.stderr.write. Patch embedding that traces the shapes it
sees on stdout and notes an upcast on stderr, the way quick debug instrumentation is written.

Breaks on torch 2.13: `sys.stdout.write(...)` ("Unsupported method call"), and the same for
sys.stderr.write.
Expected: rewritten so both writes are deferred after the graph, same text, same order
(stdout line, then stderr line).
"""

import sys

import torch
import torch.nn as nn

EXPECTED = "rewrite"


class PatchEmbed(nn.Module):
    def __init__(self, in_chans: int, dim: int, patch_size: int = 4):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        B, C, H, W = images.shape
        sys.stdout.write(f"[PatchEmbed] batch={B} channels={C} size={H}x{W}\n")
        x = self.proj(images.float())
        sys.stderr.write(f"[PatchEmbed] tokens per image: {x.shape[-2] * x.shape[-1]}\n")
        return x.flatten(2).transpose(1, 2)


def get_init_inputs():
    return [3, 8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 3, 16, 16)]
