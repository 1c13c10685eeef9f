"""Progress on stderr: a bar over the files of a long run, and one over a long file's lines.

Both appear only on a terminal (tqdm, imported only then); the line bar only in-process (a
worker's stderr would interleave with the others').
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
Progress = Callable[[int, int], None]  # (round, line): the engine's progress callbacks
MIN_FILES = 50  # fewer files than this finish too fast for a bar to help


@contextmanager
def line_progress(lines: int, enabled: bool
                  ) -> Iterator[tuple[Progress | None, Progress | None]]:
    """``(matching, applying)`` callbacks feeding a bar over a file of ``lines`` lines, or
    ``(None, None)`` when not ``enabled``."""
    if not enabled:
        yield None, None
        return
    from tqdm import tqdm

    with tqdm(total=lines, unit="line", file=sys.stderr, leave=False) as bar:
        stage = [""]

        def show(label: str, line: int) -> None:
            if label != stage[0]:  # each round reads the whole file, then applies its edits
                stage[0] = label
                bar.reset()
                bar.set_description(label, refresh=False)
            bar.update(line - bar.n)

        yield (lambda round_number, line: show(f"long file, round {round_number}", line),
               lambda round_number, line: show(f"long file, round {round_number}, applying",
                                               line))


def file_progress(items: Iterable[T], total: int, enabled: bool) -> Iterable[T]:
    """``items``, shown as a bar over ``total`` files when enabled, on a terminal, and long."""
    if not enabled or total < MIN_FILES or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, total=total, unit="file", file=sys.stderr, leave=False)
