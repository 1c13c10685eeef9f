"""Where things go in a module's text: units to parse alone and the points where imports
and helpers are inserted (found with ``ast`` on the text before its edits); lines as
``ast`` counts them are ``lines.py``'s.

libcst is several times slower than ``ast``, so ``apply.py`` parses only the units that
hold edits: for each edit, the smallest statement around it that starts a line of its
own (with the statements sharing its lines after ``;``). A unit nested in a block parses
alone inside an ``if 1:`` of its indentation, so its text is never dedented. Every line
number here is 1-based.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..syntax.lines import newline_of
from ..syntax.marks import END_MARKER, MARKER, PREFIX
from ..syntax.nodes import BLOCK_FIELDS, Span, end_line, first_line
from .helpers import closure, source_of

if TYPE_CHECKING:  # the matcher imports this module
    from ..matching.matcher import Edit

@dataclass(slots=True)
class Unit:
    """Lines ``start``..``end`` of the file: whole statements indented by ``indent``,
    and the edits inside them."""

    start: int
    end: int
    indent: str
    edits: list[Edit] = field(default_factory=list)


def units_with_edits(tree: ast.Module, lines: list[str],
                     edits: list[Edit]) -> list[tuple[Unit, list[Edit]]]:
    """The units to parse and the edits inside each, in file order.

    One sorted sweep: each edit's smallest unit is found by descending the blocks around
    it; units that hold one another (an edit of a whole ``if`` and one in its branch)
    merge into the outer one.
    """
    finder = _UnitFinder(tree, lines)
    placed = sorted(((finder.unit_of(edit.span), edit) for edit in edits),
                    key=lambda item: (item[0][0], -item[0][1]))
    units: list[Unit] = []
    for (start, end, indent), edit in placed:
        if units and start <= units[-1].end:
            units[-1].end = max(units[-1].end, end)
            units[-1].edits.append(edit)
        else:
            units.append(Unit(start, end, indent, [edit]))
    return [(unit, unit.edits) for unit in units]


@dataclass(slots=True)
class _Group:
    """Statements of one block on shared lines (``a = 1; b = 2``): lines ``start..end``."""

    start: int
    end: int
    members: list[ast.stmt]


class _UnitFinder:
    """Statements grouped by the lines they share, one block at a time, as edits ask."""

    def __init__(self, tree: ast.Module, lines: list[str]):
        self.tree, self.lines = tree, lines
        self._groups: dict[int, tuple[list[int], list[_Group]]] = {}
        self._cuttables: dict[tuple[int, int], bool] = {}

    def unit_of(self, span: Span) -> tuple[int, int, str]:
        """``(start, end, indent)`` of the smallest unit holding ``span``."""
        first, last = span[0], span[2]
        body: list[ast.stmt] | None = self.tree.body
        best = (1, len(self.lines), "")
        while body:
            starts, groups = self._grouped(body)
            at = bisect_right(starts, first) - 1
            if at < 0 or groups[at].end < last:
                break
            start, end, members = groups[at].start, groups[at].end, groups[at].members
            indent = self._own_line(members[0], start)
            if indent is not None and self._cuttable(start, end, indent):
                best = (start, end, indent)
            if len(members) != 1:
                break
            body = next((block for block in _blocks(members[0], self.lines)
                         if first_line(block[0]) <= first and last <= end_line(block[-1])),
                        None)
        return best

    def _grouped(self, body: list[ast.stmt]) -> tuple[list[int], list[_Group]]:
        """Start lines and groups of the statements of ``body``, those on shared lines
        (``a = 1; b = 2``) together."""
        key = id(body)
        if key not in self._groups:
            starts: list[int] = []
            groups: list[_Group] = []
            for node in body:
                start = first_line(node)
                if groups and start <= groups[-1].end:
                    groups[-1].end = max(groups[-1].end, end_line(node))
                    groups[-1].members.append(node)
                else:
                    starts.append(start)
                    groups.append(_Group(start, end_line(node), [node]))
            self._groups[key] = (starts, groups)
        return self._groups[key]

    def _cuttable(self, start: int, end: int, indent: str) -> bool:
        """Whether every line of a unit carries its indentation or is blank (a multi-line
        string or a continuation line may not): only then is it parsed alone."""
        if not indent:
            return True
        if (start, end) not in self._cuttables:  # each unit's lines are read once
            self._cuttables[start, end] = all(line.startswith(indent) or not line.strip("\r\n")
                                              for line in self.lines[start:end])
        return self._cuttables[start, end]

    def _own_line(self, node: ast.stmt, start: int) -> str | None:
        """The indentation of ``node`` when it starts its line, else None (a simple
        statement after ``if c:`` on the same line)."""
        line = self.lines[start - 1]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if BLOCK_FIELDS.get(type(node)) or len(indent) == node.col_offset:
            return indent  # compound statements always start a line
        return None


def _blocks(node: ast.stmt, lines: list[str]) -> Iterator[list[ast.stmt]]:
    """The blocks of statements of a compound statement that can be cut out (not an
    ``elif`` branch, which cannot be parsed alone)."""
    for name in BLOCK_FIELDS.get(type(node), ()):
        value = getattr(node, name)
        if name in ("handlers", "cases"):
            yield from (item.body for item in value if item.body)
        elif name == "orelse" and _is_elif(value, lines):
            continue  # starts on the `elif` line: it cannot be cut out
        elif value:
            yield value


def _is_elif(orelse: list[ast.stmt], lines: list[str]) -> bool:
    return (len(orelse) == 1 and isinstance(orelse[0], ast.If)
            and lines[orelse[0].lineno - 1].lstrip().startswith("elif"))


def import_insertion(tree: ast.Module, lines: list[str], modules: set[str]) -> tuple[int, str]:
    """Where (a line index of ``lines``) and what to insert to import ``modules``: after
    the docstring and ``__future__`` imports."""
    at = _after_leading(tree, _is_future)
    newline = newline_of(lines[0] if lines else "")
    block = "".join(f"import {m}{newline}" for m in sorted(modules))
    return at, _ensure_newline(lines[:at], newline) + block


def helper_insertion(tree: ast.Module, lines: list[str], names: set[str]) -> tuple[int, str] | None:
    """Where and what to insert to define the helpers ``names`` need, once: in the marked
    block, after the imports. None when all are defined already.

    Computed on the text before its edits, which lie after this point. When imports are
    inserted at the same place, they come first (they are imports too).
    """
    defined = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    missing = [n for n in closure(names) if n not in defined]
    if not missing:
        return None
    newline = newline_of(lines[0] if lines else "")
    existing = [s for s in tree.body if _is_helper(s, lines)]
    if existing:
        at = end_line(existing[-1])
        block = source_of(missing, with_preamble=False)
    else:
        at = _after_leading(tree, lambda s: isinstance(s, ast.Import | ast.ImportFrom))
        block = (f"\n\n{MARKER}\n" + source_of(missing, with_preamble=True)
                 + f"\n\n{END_MARKER}\n\n\n")
    return at, _ensure_newline(lines[:at], newline) + block.replace("\n", newline)


def _after_leading(tree: ast.Module, accept: Callable[[ast.stmt], bool]) -> int:
    """Line after the docstring and the leading statements ``accept`` takes (0 if none)."""
    at = 0
    for index, statement in enumerate(tree.body):
        docstring = index == 0 and isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Constant) and isinstance(statement.value.value, str)
        if not (docstring or accept(statement)):
            break
        at = end_line(statement)
    if at == 0 and tree.body:
        at = tree.body[0].lineno - 1  # after a shebang, coding cookie or header comments
    return at


def _is_future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _is_helper(statement: ast.stmt, lines: list[str]) -> bool:
    if isinstance(statement, ast.FunctionDef):
        return statement.name.startswith(PREFIX)
    return PREFIX + "torch" in "".join(lines[statement.lineno - 1: statement.end_lineno])


def _ensure_newline(before: list[str], newline: str) -> str:
    """A line break when the text before an insertion point does not end with one."""
    return newline if before and not before[-1].endswith(("\n", "\r")) else ""
