"""Shared by the oracle's tests: a folder of small targets, and one eager harness over it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eqrewrite.oracle.harness import Harness, HarnessOptions
from eqrewrite.oracle.settings import CompileSettings


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
