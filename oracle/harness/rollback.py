"""Find and revert the edits that changed a target's behaviour, keeping the rest.

The candidate edits are those the rewrite made, in every round of the engine
(``rewrite_rounds``), in the files the target executed (covered lines of the original
text each edit stems from). ``is_good(excluded)`` rewrites those files without the edits in
``excluded`` (a later-round edit that rewrote an excluded edit's output goes with it) and
re-runs the rewritten target eagerly; a binary search over the candidate list finds the
first edit whose addition breaks the target, which is reverted, until the whole remaining
set passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eqrewrite.rewriter.api import (
    RewriteOptions,
    RoundEdit,
    Rounds,
    Rule,
    Source,
    decode,
    encode,
    rewrite_rounds,
    write_atomic,
)

MAX_CULPRITS = 20


@dataclass(frozen=True)
class Candidate:
    """One edit in one file: (relative file, engine round, index among that round's edits)."""

    file: str
    round: int
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
    """The edits the rewrite made in the rewritten files, re-derived from the originals."""

    def __init__(self, original_root: Path, rewritten_root: Path, files: list[str],
                 rules: list[Rule], options: RewriteOptions):
        self.original_root, self.rewritten_root = original_root, rewritten_root
        self.sources: dict[str, Source] = {}
        self.rounds: dict[str, Rounds] = {}
        for file in files:
            source = decode((original_root / file).read_bytes())
            self.sources[file] = source
            self.rounds[file] = rewrite_rounds(source.text, rules, options)

    def candidates(self, covered: dict[str, set[int]]) -> list[Candidate]:
        """Edits from lines the target executed (``covered`` keys are absolute paths)."""
        found = []
        for file, rounds in self.rounds.items():
            lines = covered.get(str((self.original_root / file).resolve()), set())
            found += [Candidate(file, made.round, made.index) for made in rounds.edits
                      if lines & set(range(made.lines[0], made.lines[1] + 1))]
        return found

    def write(self, excluded: set[Candidate], files: set[str]) -> None:
        """Rewrite ``files`` in the rewritten tree with every edit except ``excluded``."""
        for file in files:
            source = self.sources[file]
            left_out = {(c.round, c.index) for c in excluded if c.file == file}
            text = self.rounds[file].without(left_out)
            write_atomic(self.rewritten_root / file, encode(source, text))

    def describe(self, candidate: Candidate, reason: str) -> Reverted:
        """A report line for one reverted edit (at the original line it stems from)."""
        made = self._edit(candidate)
        edit = made.edit
        return Reverted(candidate.file, made.lines[0], edit.rule.id, edit.before,
                        edit.after or edit.rule.rewrite, reason)

    def _edit(self, candidate: Candidate) -> RoundEdit:
        return next(made for made in self.rounds[candidate.file].edits
                    if (made.round, made.index) == (candidate.round, candidate.index))


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
