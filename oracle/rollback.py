"""Find and revert the edits that changed a target's behaviour, keeping the rest.

The candidate edits are the first-round edits in the files the target executed
(covered lines). ``is_good(applied)`` rewrites those files with only the edits in
``applied`` and re-runs the rewritten target eagerly; a binary search over the
candidate list finds the first edit whose addition breaks the target, which is
reverted, until the whole remaining set passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eqrewrite.rewriter.api import (
    Edit,
    RewriteOptions,
    Rule,
    apply_edit_subset,
    decode,
    encode,
    first_round_edits,
    write_atomic,
)

MAX_CULPRITS = 20


@dataclass(frozen=True)
class Candidate:
    """One first-round edit in one file: (relative file, index in that file's edits)."""

    file: str
    index: int


@dataclass
class Reverted:
    """An edit the rollback undid, and why."""

    file: str
    line: int
    rule: str
    before: str
    after: str
    reason: str


class EditSet:
    """The first-round edits of the rewritten files, re-derived from the originals."""

    def __init__(self, original_root: Path, rewritten_root: Path, files: list[str],
                 rules: list[Rule], options: RewriteOptions):
        self.original_root, self.rewritten_root = original_root, rewritten_root
        self.sources = {}
        self.edits: dict[str, list[Edit]] = {}
        for file in files:
            source = decode((original_root / file).read_bytes())
            self.sources[file] = source
            self.edits[file] = first_round_edits(source.text, rules, options)

    def candidates(self, covered: dict[str, set[int]]) -> list[Candidate]:
        """Edits whose lines the target executed (``covered`` keys are absolute paths)."""
        found = []
        for file, edits in self.edits.items():
            lines = covered.get(str((self.original_root / file).resolve()), set())
            found += [Candidate(file, i) for i, edit in enumerate(edits)
                      if lines & set(range(edit.span[0], edit.span[2] + 1))]
        return found

    def write(self, excluded: set[Candidate], files: set[str]) -> None:
        """Rewrite ``files`` in the rewritten tree with every edit except ``excluded``."""
        for file in files:
            source = self.sources[file]
            kept = [e for i, e in enumerate(self.edits[file]) if Candidate(file, i) not in excluded]
            text = apply_edit_subset(source.text, kept)
            write_atomic(self.rewritten_root / file, encode(source, text))

    def describe(self, candidate: Candidate, reason: str) -> Reverted:
        """A report line for one reverted edit."""
        edit = self.edits[candidate.file][candidate.index]
        return Reverted(candidate.file, edit.span[0], edit.rule.id, edit.before, edit.after
                        or edit.rule.rewrite, reason)


def find_culprits(candidates: list[Candidate],
                  is_good: Callable[[set[Candidate]], bool]) -> list[Candidate]:
    """Candidates whose application breaks the target; ``is_good(excluded)`` runs it."""
    culprits: list[Candidate] = []
    remaining = list(candidates)
    if not is_good(set(candidates)):
        return []  # broken even without any candidate: not attributable to these edits
    while remaining and len(culprits) < MAX_CULPRITS and not is_good(set(culprits)):
        # Smallest prefix of ``remaining`` that, applied alone, already fails.
        low, high = 0, len(remaining)
        while high - low > 1:
            middle = (low + high) // 2
            excluded = set(culprits) | set(remaining[middle:])
            if is_good(excluded):
                low = middle
            else:
                high = middle
        culprit = remaining[high - 1]
        culprits.append(culprit)
        remaining.remove(culprit)
    return culprits
