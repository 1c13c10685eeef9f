"""Rewrite one module's source text to a fixed point.

Each round parses with ``ast``, finds edits, applies them with libcst and checks
that the result still parses. Rounds repeat until no rule matches, so the output
is by construction a fixed point: a second run over it changes nothing. A later
round re-parses and re-matches only the top-level definitions that held edits
when ``incremental.py`` proves that is equivalent; otherwise it parses the whole new text
and matches only the statements the round changed or inserted when ``narrowing.py``
proves that is, and the whole file when neither does.
"""

from __future__ import annotations

import ast
import gc
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from ..analysis.facts import ModuleFacts
from ..matching.matcher import Edit, Matcher, Note, Roots
from ..matching.rules import Rule
from ..syntax.enums import Safety, Scope
from .incremental import eligible, reparse
from .narrowing import changed_roots, kept_statements, narrowable

if TYPE_CHECKING:  # libcst (which apply.py needs) loads only when a file has edits
    from .apply import Spread

MAX_ROUNDS = 10


class RewriteError(Exception):
    """A file that cannot be rewritten; ``line`` is 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int = 0, col: int = 0):
        super().__init__(message)
        self.line, self.col = line, col


@dataclass
class RewriteOptions:
    """Run-wide switches that change which rules apply and how."""

    unsafe: bool = False
    assume_tensor_params: bool = False
    scope: frozenset[Scope] | None = None
    # Per file: qualified names of the functions in the "traced"/"profiled" scopes, as the
    # runner computed them over all processed files (None: from the file alone).
    function_scopes: dict[str, frozenset[str]] | None = None
    profiles: tuple[str, ...] = ()  # files listing traced functions (--scope traced:FILE)
    trust_scalar_annotations: bool = True  # int/float/bool/complex parameters are numbers


@dataclass
class Rewrite:
    """The outcome for one module: new text and the edits, round by round."""

    text: str
    edits: list[tuple[int, Edit]] = field(default_factory=list)
    # What rules recognised but could not rewrite, at the original text's lines.
    notes: list[Note] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.edits)


def select_rules(rules: list[Rule], options: RewriteOptions) -> list[Rule]:
    """Rules that run under ``options``: unsafe ones only with ``--unsafe``."""
    chosen = [r for r in rules if options.unsafe or r.safety == Safety.SAFE]
    if options.scope is not None:
        chosen = [replace(r, scope=options.scope) for r in chosen]
    return chosen


def _outside(notes: list[Note], edits: list[Edit]) -> list[Note]:
    """The notes whose position lies in no edit's span (an edit there supersedes them) and
    on no node an edit settles (``Edit.settles``).

    Sorted by start, an edit covers a position exactly when the furthest end among the
    edits starting at or before it reaches it: one sort and a binary search per note.
    """
    settled = {e.settles for e in edits if e.settles is not None}
    notes = [n for n in notes if (n.line, n.col) not in settled]
    spans = sorted(((e.span[0], e.span[1]), (e.span[2], e.span[3])) for e in edits)
    starts = [start for start, _ in spans]
    furthest: list[tuple[int, int]] = []
    for _, end in spans:
        furthest.append(max(end, furthest[-1]) if furthest else end)
    kept = []
    for note in notes:
        at = (note.line, note.col - 1)
        index = bisect_right(starts, at) - 1
        if index < 0 or furthest[index] < at:
            kept.append(note)
    return kept


def parse(text: str) -> ast.Module:
    """``ast.parse`` with errors turned into RewriteError carrying the line."""
    try:
        return ast.parse(text)
    except SyntaxError as error:
        raise RewriteError(f"syntax error: {error.msg}", error.lineno or 0,
                           error.offset or 0) from None
    except ValueError as error:  # e.g. null bytes
        raise RewriteError(f"cannot parse: {error}") from None


def rewrite_source(text: str, rules: list[Rule], options: RewriteOptions | None = None,
                   tree: ast.Module | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   applying: Callable[[int, int], None] | None = None,
                   spread: Spread | None = None) -> Rewrite:
    """Apply ``rules`` (already selected) to ``text`` until nothing more matches.

    ``progress(round, line)`` is called as matching reaches each module-level statement,
    and ``applying(round, line)`` as edits are applied from that line on (for a long file,
    which can take a while). ``spread`` shares a long file's edits among worker processes
    (``apply.Spread``).
    """
    # Parsing and matching allocate millions of objects that all stay alive until the
    # file is done, which the cyclic garbage collector would scan again and again for
    # nothing (half the time on a 1 MB file, 5 % on torch's sources); it runs once the
    # file is done instead.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _rewrite(text, rules, options or RewriteOptions(), tree, progress, applying,
                        spread)
    finally:
        if collecting:
            gc.enable()


def _rewrite(text: str, rules: list[Rule], options: RewriteOptions, tree: ast.Module | None,
             progress: Callable[[int, int], None] | None,
             applying: Callable[[int, int], None] | None,
             spread: Spread | None) -> Rewrite:
    result = Rewrite(text)
    current, tree = text, tree or parse(text)
    incremental = eligible(rules, options.assume_tensor_params)
    narrowing = narrowable(rules, options.function_scopes)
    roots: Roots | None = None  # None: the whole module
    facts: ModuleFacts | None = None
    for round_number in range(1, MAX_ROUNDS + 1):
        matcher = Matcher(current, tree, rules, options.assume_tensor_params,
                          options.trust_scalar_annotations, options.function_scopes, facts)
        edits = matcher.run(roots, None if progress is None else partial(progress, round_number))
        if round_number == 1:
            result.notes = _outside(matcher.notes, edits)
        if not edits:
            result.text = current
            return result
        from .apply import ApplyError, apply_edits  # libcst loads only when a file has edits

        previous = current
        try:
            current = apply_edits(current, edits, tree, None if applying is None
                                  else partial(applying, round_number), spread)
        except ApplyError as error:
            raise RewriteError(f"internal error applying edits: {error}") from None
        result.edits += [(round_number, edit) for edit in edits]
        try:
            reparsed = reparse(previous, current, tree, edits) if incremental else None
            if reparsed is not None:
                tree, roots, facts = reparsed.tree, reparsed.roots, reparsed.facts
            else:
                kept = kept_statements(previous, tree, edits, rules,
                                       matcher.facts) if narrowing else None
                # Freed before the new text is parsed: the two trees need not coexist.
                tree = None
                del matcher
                tree = ast.parse(current)
                roots = None if kept is None else changed_roots(kept, current, tree)
                facts = None
        except SyntaxError as error:
            rule_ids = sorted({e.rule.id for e in edits})
            raise RewriteError(f"rewrite by {', '.join(rule_ids)} produced invalid Python "
                               f"({error.msg}); file left unchanged", error.lineno or 0) from None
    raise RewriteError(f"failed to converge after {MAX_ROUNDS} rounds: rules keep rewriting "
                       "their own output; file left unchanged")
