"""A rewrite of one text kept round by round, to replay it without some of its edits.

``rewrite_rounds`` records every edit the engine makes, in every round, with the lines of
the original text each stems from (``RoundEdit``); ``Rounds.without`` replays the rewrite
leaving some out (the oracle's rollback bisects over them, ``oracle/harness/rollback.py``).
``apply_edit_subset`` applies some of the edits one round found. The API (``api.py``)
exposes these names; the oracle imports them from there.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from .matching.matcher import Edit, Span, find_edits, with_requirements
from .matching.rules import Rule
from .rewriting.engine import MAX_ROUNDS, RewriteError, RewriteOptions, parse
from .rewriting.engine import rewrite_source as rewrite_text
from .syntax.lines import split_lines

__all__ = ["Lines", "RoundEdit", "Rounds", "apply_edit_subset", "rewrite_rounds"]


def apply_edit_subset(text: str, edits: list[Edit], tree: ast.Module | None = None) -> str:
    """``text`` with only ``edits`` (some of the edits one round found in it) applied, as
    the rewrite applies them: each edit's ``after`` becomes the text written in its place.
    ``tree``: ``text`` already parsed, if the caller has it."""
    from .rewriting.apply import apply_edits  # libcst loads only when needed

    return apply_edits(text, edits, tree) if edits else text


def rewrite_rounds(text: str, rules: list[Rule], options: RewriteOptions) -> Rounds:
    """Every edit rewriting ``text`` makes, in all the engine's rounds, ready to be replayed
    with some of them left out (``Rounds.without``; the oracle's rollback bisects them).

    ``rules`` are the run's selected rules; as the command line's runner does, only those
    whose tokens occur in ``text`` run (a rule cannot join in a later round)."""
    return Rounds(text, [r for r in rules if r.could_match(text)], options)


Lines = tuple[int, int]  # first and last line, 1-based


@dataclass(frozen=True)
class RoundEdit:
    """One edit a rewrite made: ``index`` among those of round ``round`` (whose text its
    ``edit.span`` counts in), and the ``lines`` of the original text it stems from."""

    round: int
    index: int
    edit: Edit
    lines: Lines


class Rounds:
    """A rewrite of one text, round by round, as the engine makes it (``rewrite_rounds``).

    ``without(excluded)`` replays it: each round the engine's matcher runs on the replayed
    text, and an edit it finds is applied only if it is one the rewrite made (the same rule
    at the same place, found through the lines the two texts share) and not excluded. So an
    excluded edit stays out in every later round, and a later edit that rewrote its output
    goes with it.
    """

    def __init__(self, text: str, rules: list[Rule], options: RewriteOptions):
        self.rules, self.options = rules, options
        rewrite = rewrite_text(text, rules, options)
        self.texts = [text]  # the text each round read, then the result
        self.by_round: list[list[Edit]] = []
        for number in range(1, MAX_ROUNDS + 1):
            edits = [edit for n, edit in rewrite.edits if n == number]
            if not edits:
                break
            self.by_round.append(edits)
            self.texts.append(apply_edit_subset(self.texts[-1], edits))
        if self.texts[-1] != rewrite.text:
            raise RewriteError("replaying the rewrite's rounds gave another text")
        # How each round's output lines follow from its input lines (diffed once per round).
        self._changes = [SequenceMatcher(None, split_lines(old), split_lines(new),
                                         autojunk=False).get_opcodes()
                         for old, new in zip(self.texts, self.texts[1:])]
        self.edits = [RoundEdit(number, index, edit, self._origin(number, edit.span))
                      for number, edits in enumerate(self.by_round, 1)
                      for index, edit in enumerate(edits)]

    def without(self, excluded: Collection[tuple[int, int]]) -> str:
        """The rewrite's text with the edits ``(round, index)`` in ``excluded`` left out."""
        current = self.texts[0]
        for number, made in enumerate(self.by_round, 1):
            tree = parse(current)
            found = find_edits(current, tree, self.rules, self.options.assume_tensor_params,
                               self.options.trust_scalar_annotations,
                               self.options.function_scopes)
            place = _Placer(current, self.texts[number - 1])
            wanted: dict[tuple[str, Span | None], int] = {
                (edit.rule.id, edit.span): index for index, edit in enumerate(made)}
            kept = with_requirements([
                edit for edit in found
                if (index := wanted.get((edit.rule.id, place(edit.span)))) is not None
                and (number, index) not in excluded])
            current = apply_edit_subset(current, kept, tree)
        parse(current)  # a replay that does not parse is refused, as the rewrite would be
        return current

    def _origin(self, number: int, span: Span) -> Lines:
        """The lines of the original text that ``span`` (in round ``number``'s text) stems
        from: through each earlier round, a line it rewrote stands for the lines it replaced."""
        first, last = span[0], span[2]
        for codes in reversed(self._changes[:number - 1]):
            first, last = _back(codes, first)[0], _back(codes, last)[1]
        return first, last


class _Placer:
    """Spans of one text -> the same spans in another version of it: lines the two share
    are found by diffing lines, and characters within lines that differ (an edit elsewhere
    on the line) by diffing the two lines. A span is placed only where the other text holds
    exactly the same characters."""

    def __init__(self, text: str, other: str):
        self.lines, self.other = split_lines(text), split_lines(other)
        self.pairs: dict[int, int] = {}  # 0-based line here -> line there
        if text == other:
            self.pairs = {i: i for i in range(len(self.lines))}
            return
        matcher = SequenceMatcher(None, self.lines, self.other, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                self.pairs.update(zip(range(i1, i2), range(j1, j2)))

    def __call__(self, span: Span) -> Span | None:
        start = self._point(span[0], span[1])
        end = self._point(span[2], span[3] - 1) if span[3] > 0 else None
        if start is None or end is None:
            return None
        placed = (start[0], start[1], end[0], end[1] + 1)
        return placed if _text(self.other, placed) == _text(self.lines, span) else None

    def _point(self, line: int, col: int) -> tuple[int, int] | None:
        there = self.pairs.get(line - 1)
        if there is None:
            return None
        here_text, there_text = self.lines[line - 1], self.other[there]
        if here_text == there_text:
            return there + 1, col
        blocks = SequenceMatcher(None, here_text, there_text, autojunk=False)
        for block in blocks.get_matching_blocks():
            if block.a <= col < block.a + block.size:
                return there + 1, block.b + col - block.a
        return None


def _text(lines: list[str], span: Span) -> str | None:
    """The characters ``span`` covers in ``lines`` (None past the end)."""
    first, col, last, end_col = span
    if not 1 <= first <= last <= len(lines):
        return None
    if first == last:
        return lines[first - 1][col:end_col]
    return (lines[first - 1][col:] + "".join(lines[first:last - 1])
            + lines[last - 1][:end_col])


def _back(codes: Sequence[tuple[str, int, int, int, int]], line: int) -> Lines:
    """The lines of a round's input that line ``line`` of its output stands for."""
    for tag, i1, i2, j1, j2 in codes:
        if j1 < line <= j2:
            if tag == "equal":
                return i1 + line - j1, i1 + line - j1
            return i1 + 1, max(i1 + 1, i2)  # rewritten (or inserted) lines
    return line, line
