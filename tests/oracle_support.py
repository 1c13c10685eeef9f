"""Shared by the oracle's tests: a folder of small targets, and one eager harness over it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eqrewrite.oracle.harness.harness import Harness, HarnessOptions
from eqrewrite.oracle.judging.settings import CompileSettings


def write_targets(root: Path, files: dict[str, str]) -> Path:
    """Write each (dedented) source to ``root / name``; return ``root``."""
    for name, code in files.items():
        (root / name).write_text(textwrap.dedent(code))
    return root


@contextmanager
def eager_harness(tree: Path, reproducer_dir: Path, timeout: float = 120) -> Iterator[Harness]:
    """A harness over ``tree`` alone (no rewritten tree) with the eager backend by default,
    writing reproducers to ``reproducer_dir``; its worker is closed on exit."""
    handle = Harness(tree, None, HarnessOptions(CompileSettings(backend="eager"), timeout=timeout,
                                         reproducer_dir=reproducer_dir))
    try:
        yield handle
    finally:
        handle.close()


# A small module target (a Linear layer, subtraction, scaling, negation) several oracle
# tests rewrite and validate.
MLP = '''
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return (h - y) * 2 + -h


def get_init_inputs():
    return [8]


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(4, 8), torch.randn(8, 4).t()]
'''
