"""Where things go in a module's text: units to parse alone, and insertion points.

libcst parsing is the slowest step, so ``apply.py`` parses only the statements
that hold edits: the innermost statement around them whose lines can be dedented and
re-indented exactly (a statement of a method's body, not the whole class). Imports
and helpers are inserted as text at points found with ``ast``. Every position
here is a 1-based line number of the text it was computed from.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .helpers import END_MARKER, MARKER, PREFIX, closure, source_of

_NEWLINE_RE = re.compile(r"(\r\n|\r|\n)")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where ``ast`` counts a new line."""
    parts = _NEWLINE_RE.split(text)
    return [a + b for a, b in zip(parts[::2], parts[1::2] + [""])]


def newline_of(text: str) -> str:
    """The file's line ending (of its first line)."""
    match = _NEWLINE_RE.search(text)
    return match.group(1) if match else "\n"


@dataclass
class Unit:
    """Lines ``start``..``end`` of the file, which parse alone once ``indent`` is removed."""

    start: int
    end: int
    indent: str
    node: ast.stmt


def _units(body: list[ast.stmt], indent: str) -> list[Unit]:
    units: list[Unit] = []
    for node in body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if units and start <= units[-1].end:  # `a = 1; b = 2` share a line
            units[-1].end = max(units[-1].end, node.end_lineno)
            continue
        units.append(Unit(start, node.end_lineno, indent, node))
    return units


def units_with_edits(tree: ast.Module, lines: list[str], edits: list) -> list[tuple[Unit, list]]:
    """The units to parse and the edits inside each, in file order: the innermost
    statements holding the edits that can be cut out and dedented exactly (a method of a
    class, a statement of a function body...), else the enclosing one."""
    found: list[tuple[Unit, list]] = []

    def place(units: list[Unit], pending: list) -> None:
        for unit in units:
            inside = [e for e in pending if unit.start <= e.span[0] and e.span[2] <= unit.end]
            if not inside:
                continue
            inner = _inner_units(unit, lines)
            if inner and all(any(u.start <= e.span[0] and e.span[2] <= u.end for u in inner)
                             for e in inside):
                place(inner, inside)
            else:
                found.append((unit, inside))

    place(_units(tree.body, ""), edits)
    return found


def _inner_units(unit: Unit, lines: list[str]) -> list[Unit] | None:
    """The statements of a compound statement's blocks as units, in file order; None when
    some block cannot be cut out (a block on its header's line, lines that do not all carry
    the block's indentation: a multi-line string, a continuation line)."""
    node = unit.node
    blocks = [node.body] if isinstance(node, ast.ClassDef | ast.FunctionDef
                                       | ast.AsyncFunctionDef | ast.With | ast.AsyncWith) \
        else [getattr(node, "body", None), *(h.body for h in getattr(node, "handlers", ())),
              getattr(node, "orelse", None), getattr(node, "finalbody", None)] \
        if isinstance(node, _COMPOUND) else []
    found: list[Unit] = []
    for block in blocks:
        if not block:
            continue
        indent = _indent_of(lines, block[0].lineno)
        if not (indent.startswith(unit.indent) and len(indent) > len(unit.indent)
                and block[0].col_offset == len(indent.encode("utf-8"))
                and block[0].lineno > _taken_until(found, node)):
            return None
        inner = _units(block, indent)
        if not all(_dedentable(lines, u, indent) for u in inner):
            return None
        found += inner
    return found or None


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.TryStar)


def _taken_until(units: list[Unit], node: ast.stmt) -> int:
    """The last line already taken: the previous block's, or the header's first line."""
    return units[-1].end if units else node.lineno


def _indent_of(lines: list[str], line: int) -> str:
    text = lines[line - 1]
    return text[: len(text) - len(text.lstrip(" \t"))]


def _dedentable(lines: list[str], unit: Unit, indent: str) -> bool:
    return all(line.startswith(indent) or not line.strip("\r\n")
               for line in lines[unit.start - 1: unit.end])


def dedent(lines: list[str], indent: str) -> str:
    """Remove ``indent`` from every line that is not empty."""
    cut = len(indent)
    return "".join(line[cut:] if line.strip("\r\n") else line for line in lines)


def reindent(text: str, indent: str) -> list[str]:
    """Put ``indent`` back in front of every line that is not empty."""
    return [indent + line if line.strip("\r\n") else line for line in split_lines(text)
            if line]


def insert_imports(text: str, modules: set[str]) -> str:
    """``import m`` for each module, after the docstring and ``__future__`` imports."""
    tree, lines = ast.parse(text), split_lines(text)
    at = _after_leading(tree, lambda s: _is_future(s))
    newline = newline_of(text)
    block = "".join(f"import {m}{newline}" for m in sorted(modules))
    return "".join(lines[:at]) + _ensure_newline(lines[:at], newline) + block + "".join(
        lines[at:])


def insert_helpers(text: str, names: set[str]) -> str:
    """Define the helpers ``names`` need, once: in the marked block, after the imports."""
    tree, lines = ast.parse(text), split_lines(text)
    defined = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    missing = [n for n in closure(names) if n not in defined]
    if not missing:
        return text
    newline = newline_of(text)
    existing = [s for s in tree.body if _is_helper(s, lines)]
    if existing:
        at = existing[-1].end_lineno
        block = source_of(missing, with_preamble=False)
    else:
        at = _after_leading(tree, lambda s: isinstance(s, ast.Import | ast.ImportFrom))
        block = (f"\n\n{MARKER}\n" + source_of(missing, with_preamble=True)
                 + f"\n\n{END_MARKER}\n\n\n")
    block = block.replace("\n", newline)
    return "".join(lines[:at]) + _ensure_newline(lines[:at], newline) + block + "".join(
        lines[at:])


def _after_leading(tree: ast.Module, accept) -> int:
    """Line after the docstring and the leading statements ``accept`` takes (0 if none)."""
    at = 0
    for index, statement in enumerate(tree.body):
        docstring = index == 0 and isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Constant) and isinstance(statement.value.value, str)
        if not (docstring or accept(statement)):
            break
        at = statement.end_lineno
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
