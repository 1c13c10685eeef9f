"""Where things go in a module's text: lines as ``ast`` counts them, and the points
where imports and helpers are inserted (found with ``ast`` on the text before its edits).
"""

from __future__ import annotations

import ast
import re

from .helpers import END_MARKER, MARKER, PREFIX, closure, source_of

_NEWLINE_RE = re.compile(r"(\r\n|\r|\n)")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where ``ast`` counts a new line."""
    parts = _NEWLINE_RE.split(text)
    return [a + b for a, b in zip(parts[::2], parts[1::2] + [""])]


def lines_holding(text: str, tokens: frozenset[str]) -> list[int]:
    """Sorted numbers of the lines holding one of ``tokens`` (a keyword or a name only as a
    whole word), found with ``str.find`` jumps, which is several times faster than a regex."""
    if "\r" in text:  # lines may end in a lone \r: split as ast does
        return [number for number, line in enumerate(split_lines(text), 1)
                if any(_holds(line, token) for token in tokens)]
    found: set[int] = set()
    for token in tokens:
        word = token.isidentifier()
        line, counted = 1, 0
        at = text.find(token)
        while at >= 0:
            if word and not _whole_word(text, at, len(token)):
                at = text.find(token, at + 1)
                continue
            line += text.count("\n", counted, at)
            found.add(line)
            counted = text.find("\n", at)
            if counted < 0:
                break
            at = text.find(token, counted)
    return sorted(found)


def _holds(line: str, token: str) -> bool:
    if not token.isidentifier():
        return token in line
    at = line.find(token)
    while at >= 0 and not _whole_word(line, at, len(token)):
        at = line.find(token, at + 1)
    return at >= 0


def _whole_word(text: str, at: int, size: int) -> bool:
    before, after = text[at - 1: at] if at else "", text[at + size: at + size + 1]
    return not (before.isalnum() or before == "_" or after.isalnum() or after == "_")


def newline_of(text: str) -> str:
    """The file's line ending (of its first line)."""
    match = _NEWLINE_RE.search(text)
    return match.group(1) if match else "\n"


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
        at = existing[-1].end_lineno
        block = source_of(missing, with_preamble=False)
    else:
        at = _after_leading(tree, lambda s: isinstance(s, ast.Import | ast.ImportFrom))
        block = (f"\n\n{MARKER}\n" + source_of(missing, with_preamble=True)
                 + f"\n\n{END_MARKER}\n\n\n")
    return at, _ensure_newline(lines[:at], newline) + block.replace("\n", newline)


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
