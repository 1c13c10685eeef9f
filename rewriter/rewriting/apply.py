"""Apply edits found by ``matcher.py`` with libcst, preserving everything else.

Only the units holding edits are parsed with libcst (see ``layout.units_with_edits``):
the smallest statements around them. In each unit the nodes an edit names (its target
and what its metavariables bound, by character span from the ``ast`` pass) are found
in one code-generation pass that counts characters, and one bottom-up transform that
enters only the nodes around targets replaces them, so an edit whose binding contains
another edit (``a + b + c``) receives the already rewritten inner node. The unit's new
code is libcst's; the text between units is kept as it is, and the file is joined once.
Cost is linear in the file: every unit, edit and line is handled a bounded number of
times.

Here: the file's units, applied in order (or by forked workers, for a long file), and one
unit applied; the code-generation passes are ``codegen.py``'s, the transform and the
templates filled in ``substitution.py``'s.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator

import libcst as cst

from ..matching.matcher import Edit
from ..syntax.enums import Level
from ..syntax.lines import newline_of, split_lines
from ..syntax.nodes import Span
from .codegen import Emitter, Locator, Request
from .layout import Unit, helper_insertion, import_insertion, units_with_edits
from .substitution import Applier, TemplateError

# Classes, some abstract: mypy refuses those as type[CSTNode] (python/mypy#4717).
_LEVELS: dict[Level, type] = {
    Level.EXPRESSION: cst.BaseExpression, Level.STATEMENT: cst.BaseSmallStatement,
    Level.COMPOUND: cst.BaseCompoundStatement}
# What a metavariable bound to a statement is filled with (a template line ``$name``).
_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
_BLOCK_HEADER = "if 1:"  # a nested unit parses inside this, keeping its own indentation

# Maps a function over chunks in worker processes forked after the call starts (so they
# inherit the module state set before it), giving the results in order.
ChunkApplier = Callable[[tuple[int, int]], list[tuple[str, list[str]]]]
Spread = Callable[[ChunkApplier, list[tuple[int, int]]], Iterable[list[tuple[str, list[str]]]]]
SPREAD_MIN_UNITS = 256  # fewer units than this are applied here: forking costs more
SPREAD_CHUNKS = 64  # chunks per file: small enough for progress and an even share
_shared: tuple[str, list[int], list[Unit]] | None = None  # what forked workers read


class ApplyError(Exception):
    """An edit could not be located in the libcst tree, or its template not put in place
    (a bug, reported per file)."""


def apply_edits(text: str, edits: list[Edit], tree: ast.Module | None = None,
                progress: Callable[[int], None] | None = None,
                spread: Spread | None = None) -> str:
    """Return ``text`` with ``edits`` applied and the modules and helpers they need added.

    ``tree`` is ``text`` parsed (parsed here if not given). Any subset of one round's
    edits can be applied (the oracle's rollback does). ``progress`` is told the first
    line of each unit as it is applied. ``spread``, if given, shares the units of a long
    file among forked worker processes (see ``Spread``).
    """
    tree = tree if tree is not None else ast.parse(text)
    lines = split_lines(text)
    starts = [0]
    for text_line in lines:
        starts.append(starts[-1] + len(text_line))
    units = [unit for unit, _ in units_with_edits(tree, lines, edits)]
    splices: list[tuple[int, int, str]] = []  # (start, end, new text) in characters
    for unit, code in zip(units, _unit_codes(text, starts, units, progress, spread)):
        splices.append((starts[unit.start - 1], starts[unit.end], code))
    imports: set[str] = set().union(*(edit.imports for edit in edits))
    helpers: set[str] = set().union(*(edit.helpers for edit in edits))
    insertions = [import_insertion(tree, lines, imports) if imports else None,
                  helper_insertion(tree, lines, helpers) if helpers else None]
    unit_starts = [u.start for u in units]
    for line, block in filter(None, insertions):
        # A point between a decorator and its function moves before the decorator.
        at = bisect_right(unit_starts, line) - 1
        if at >= 0 and units[at].start - 1 < line < units[at].end:
            line = units[at].start - 1
        splices.append((starts[line], starts[line], block))
    # Insertions sort before a replacement that starts at the same place (stable sort).
    splices.sort(key=lambda s: (s[0], s[1] != s[0]))
    out: list[str] = []
    at = 0
    for lo, hi, new in splices:
        out += (text[at:lo], new)
        at = hi
    out.append(text[at:])
    return "".join(out)


def _unit_codes(text: str, starts: list[int], units: list[Unit],
                progress: Callable[[int], None] | None,
                spread: Spread | None) -> Iterator[str]:
    """The new code of each unit, in order (applied here or by ``spread``'s workers)."""
    if spread is None or len(units) < SPREAD_MIN_UNITS:
        for unit in units:
            if progress is not None:
                progress(unit.start)
            yield _apply_to_unit(text, starts, unit)
        return
    global _shared
    # Forked workers inherit this instead of receiving the text and edits pickled.
    _shared = (text, starts, units)
    try:
        size = -(-len(units) // SPREAD_CHUNKS)
        chunks = [(lo, min(lo + size, len(units))) for lo in range(0, len(units), size)]
        for (lo, hi), outcome in zip(chunks, spread(_apply_chunk, chunks)):
            for unit, (code, afters) in zip(units[lo:hi], outcome):
                for edit, after in zip(unit.edits, afters):
                    edit.after = after  # set in the worker's copy: copied back here
                yield code
            if progress is not None:
                progress(units[hi - 1].start)
    finally:
        _shared = None


def _apply_chunk(bounds: tuple[int, int]) -> list[tuple[str, list[str]]]:
    """In a forked worker: the new code of units ``lo:hi`` and the text of their edits."""
    if _shared is None:
        raise ApplyError("a worker was not forked from the process applying the edits")
    text, starts, units = _shared
    outcome = []
    for unit in units[bounds[0]:bounds[1]]:
        code = _apply_to_unit(text, starts, unit)
        outcome.append((code, [edit.after for edit in unit.edits]))
    return outcome


def _apply_to_unit(text: str, starts: list[int], unit: Unit) -> str:
    """The new text of ``unit``'s lines, with its edits applied by libcst."""
    lo, hi = starts[unit.start - 1], starts[unit.end]
    chunk, prefix, indent = text[lo:hi], "", ""
    if unit.start == unit.end:  # one line: parsed without its indentation
        indent = unit.indent
        chunk = chunk[len(indent):]
    elif unit.indent:
        prefix = _BLOCK_HEADER + newline_of(chunk)
    shift = len(prefix) - lo - len(indent)

    def where(span: Span) -> tuple[int, int]:
        return starts[span[0] - 1] + span[1] + shift, starts[span[2] - 1] + span[3] + shift

    try:
        module = cst.parse_module(prefix + chunk)
    except cst.ParserSyntaxError as error:
        raise ApplyError(f"libcst cannot parse lines {unit.start}-{unit.end}: "
                         f"{str(error).splitlines()[0]}") from None
    locator = Locator(module)
    targets = [locator.want(where(edit.span), _LEVELS[edit.level], target=True)
               for edit in unit.edits]
    bindings: list[dict[str, Request | list[Request]]] = [
        {name: [locator.want(where(s), cst.Arg) for s in span]
         if isinstance(span, list) else locator.want(
             where(span), _STATEMENT if name in edit.statements else cst.BaseExpression)
         for name, span in edit.bindings.items()} for edit in unit.edits]
    locator.run()
    applier = Applier(locator.path)
    for edit, target, bound in zip(unit.edits, targets, bindings):
        applier.targets[id(_found(target, unit))] = (edit, {
            name: [_found(r, unit) for r in found] if isinstance(found, list)
            else _found(found, unit) for name, found in bound.items()})
    applier.wanted = {id(node) for _, values in applier.targets.values()
                      for found in values.values()
                      for node in (found if isinstance(found, list) else [found])}
    try:
        rewritten = applier.apply(module)
    except TemplateError as error:
        raise ApplyError(str(error)) from None
    emitter = Emitter(rewritten, applier.results)
    code = emitter.run()
    if not code.startswith(prefix):
        raise ApplyError(f"the block around lines {unit.start}-{unit.end} changed")
    for edit, result in applier.results.values():
        edit.after = _from_keyword(emitter.code_of(result), result)
    if chunk.endswith("\r") and not code.endswith("\r"):
        code += "\r"  # libcst drops a last line ending that is a lone "\r"
    return indent + code[len(prefix):]


def _found(request: Request, unit: Unit) -> cst.CSTNode:
    """The node ``request`` found in ``unit``; an ``ApplyError`` when none was."""
    if request.found is None:
        node_type = request.node_type
        named = (" or ".join(t.__name__ for t in node_type) if isinstance(node_type, tuple)
                 else node_type.__name__)
        raise ApplyError(f"no {named} found for an edit in lines {unit.start}-{unit.end}")
    return request.found


def _from_keyword(code: str, node: cst.CSTNode) -> str:
    """The text an edit's span holds: a compound statement's code starts at its keyword
    (libcst emits the lines above it and its indentation as part of the statement)..."""
    if not isinstance(node, cst.BaseCompoundStatement):
        return code
    lines = code.splitlines(keepends=True)[len(node.leading_lines):]
    # ... and ends at its last line's end, as the span does (libcst adds the line break).
    text = "".join(lines).lstrip(" \t")
    return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text


