"""Unified diffs of a rewritten file, in linear time when the rewrite kept every line's place.

``difflib`` searches for the longest matching blocks, which on a long file with many
changed lines is quadratic in practice (on a 1 MB file with 60,000 changed lines it took
150 of 210 seconds). Most rewrites replace text within lines and keep the line count:
then line ``i`` of the old text corresponds to line ``i`` of the new one, and the diff is
the lines that differ, grouped into hunks with context exactly as ``difflib`` groups them
(hunks closer than twice the context are merged). Other rewrites use ``difflib``.
"""

from __future__ import annotations

import difflib

CONTEXT = 3  # lines of context around each hunk, as in `diff -u` and difflib


def unified_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    """The unified diff from ``old`` to ``new`` ("" when they are equal)."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(old_lines) != len(new_lines):
        return "".join(difflib.unified_diff(old_lines, new_lines, fromfile, tofile))
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    if not changed:
        return ""
    out = [f"--- {fromfile}\n", f"+++ {tofile}\n"]
    for first, last in _hunks(changed):
        lo, hi = max(0, first - CONTEXT), min(len(old_lines), last + CONTEXT + 1)
        span = _range(lo, hi)
        out.append(f"@@ -{span} +{span} @@\n")
        out += _hunk_lines(old_lines, new_lines, lo, hi)
    return "".join(out)


def _hunks(changed: list[int]) -> list[tuple[int, int]]:
    """First and last changed line of each hunk: changes more than ``2 * CONTEXT``
    unchanged lines apart start a new one."""
    hunks = [(changed[0], changed[0])]
    for index in changed[1:]:
        first, last = hunks[-1]
        if index - last - 1 > 2 * CONTEXT:
            hunks.append((index, index))
        else:
            hunks[-1] = (first, index)
    return hunks


def _hunk_lines(old: list[str], new: list[str], lo: int, hi: int) -> list[str]:
    """Context lines as they are; each run of changed lines as its old lines, then its new."""
    out: list[str] = []
    index = lo
    while index < hi:
        if old[index] == new[index]:
            out.append(" " + old[index])
            index += 1
            continue
        end = index
        while end < hi and old[end] != new[end]:
            end += 1
        out += ["-" + line for line in old[index:end]]
        out += ["+" + line for line in new[index:end]]
        index = end
    return out


def _range(lo: int, hi: int) -> str:
    """A hunk's line range as difflib writes it: ``start,length``, or ``start`` alone for
    a single line."""
    length = hi - lo
    return f"{lo + 1}" if length == 1 else f"{lo + 1},{length}"
