"""Which lines of a module's text hold a token: cheap tests before searching the tree.

Searching the expressions of every statement is slow; a rule that needs ``:=`` or
``register_buffer`` asks first whether the statement's lines mention it. Without the
text (a tree built by hand) every answer is "maybe" (True).
"""

from __future__ import annotations

import ast
import bisect
import re

from ...syntax.lines import split_lines
from ...syntax.nodes import end_line, first_line

_COMPILER_CALL = re.compile(r"\b(?:compile|optimize)\s*\(")


class TextIndex:
    """Token tests on one module's source text."""

    def __init__(self, source: str | None):
        self.source = source
        self.has_walrus = source is None or ":=" in source
        # A substring test; the audit sets a stricter one (``compile`` as a word).
        self.may_compile = source is None or "compile" in source or "optimize" in source
        # A compiler passed a function is a call of a name ending so (``torch.compile(f)``).
        self.may_call_compiler = self.may_compile and (
            source is None or _calls_compiler(source))
        self._lines_with: dict[str, list[int] | None] = {}

    def may_have_walrus(self, statement: ast.stmt) -> bool:
        """Whether ``statement`` may hold a ``:=`` expression."""
        return self.mentions(statement, ":=")

    def mentions(self, statement: ast.stmt, token: str) -> bool:
        """Whether the lines of ``statement`` hold ``token`` (True when the text is not
        known), so that expressions are searched only in the statements that can matter."""
        if token not in self._lines_with:
            self._lines_with[token] = None if self.source is None else _lines_with(
                self.source, token)
        lines = self._lines_with[token]
        if lines is None:
            return True
        # From its first decorator's line: a decorator is part of the statement.
        at = bisect.bisect_left(lines, first_line(statement))
        return at < len(lines) and lines[at] <= end_line(statement)


def _calls_compiler(text: str) -> bool:
    """``_COMPILER_CALL.search(text)``, tried only where the words occur: a search for a
    pattern starting with ``\b`` and a choice tests every position (a second per cold
    run over transformers), ``str.find`` skips to the few that matter."""
    for word in ("compile", "optimize"):
        at = text.find(word)
        while at != -1:
            if _COMPILER_CALL.match(text, at):  # ``\b`` still sees the character before
                return True
            at = text.find(word, at + 1)
    return False


def _lines_with(text: str, token: str) -> list[int]:
    """Numbers of the lines holding ``token``, in order."""
    if token not in text:
        return []
    if "\r" in text:  # lines end in \r too: split as ast does
        return [n for n, line in enumerate(split_lines(text), 1) if token in line]
    found: list[int] = []
    line, at = 1, 0
    for position in (m.start() for m in re.finditer(re.escape(token), text)):
        line += text.count("\n", at, position)
        at = position
        if not found or found[-1] != line:
            found.append(line)
    return found
