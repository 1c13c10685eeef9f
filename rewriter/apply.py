"""Apply edits found by ``matcher.py`` as text splices, preserving everything else.

Each edit names its target and what its metavariables bound by character spans
(from the ``ast`` pass). Edits are rendered innermost first, so an outer edit
(``a + b + c``) receives the already rewritten text of its operands, and the file
is then rebuilt in one pass from the untouched text between the outermost targets.
Nothing but the targets changes, so comments and formatting elsewhere are kept byte
for byte, and the cost is linear in the size of the file and of the edits (no second
parser: the libcst-based version parsed every statement holding an edit).

Parentheses are handled as Python's grammar has them: the grouping parentheses
around an expression belong to it (found by scanning the text next to its span, where
only whitespace, comments and line continuations can sit). A rewritten expression
drops its own parentheses unless they hold a comment or the result needs them; a
bound operand keeps them, gains them where the template needs them (an operation
used as an attribute's base), and loses comment-free ones as a call argument.
"""

from __future__ import annotations

import ast
import bisect
import keyword
from dataclasses import dataclass, field
from functools import cache

from .facts import statements
from .layout import helper_insertion, import_insertion, split_lines
from .matcher import Comments, Edit, Lines, shape_of
from .pattern import metavariable_of, to_placeholders

# After these words "(" opens a group; after any other name it opens a call's arguments.
_GROUPING_KEYWORDS = frozenset(keyword.kwlist) - {"True", "False", "None"}
_CALLABLE_ENDS = frozenset(")]}'\".")  # "." only ends `...`
_ATOMIC = frozenset({"atom", "tuple", "enclosed"})
_NEEDS_PARENS_AS_ARGUMENT = frozenset({"bare", "tuple", "enclosed"})
_LEVELS = {"expression": 0, "statement": 1, "compound": 2}


class ApplyError(Exception):
    """Edits that cannot be applied together (a bug, reported per file)."""


def apply_edits(text: str, edits: list[Edit], tree: ast.Module | None = None) -> str:
    """Return ``text`` with ``edits`` applied and the modules and helpers they need added.

    ``tree`` is ``text`` parsed (parsed here if not given). Any subset of one round's
    edits can be applied (the oracle's rollback does).
    """
    tree = tree if tree is not None else ast.parse(text)
    source = _Source(text, tree)
    placed = sorted((source.place(edit) for edit in edits),
                    key=lambda p: (p.outer_start, -p.outer_end, -_LEVELS[p.edit.level]))
    roots = _nest(placed)
    for item in reversed(placed):  # every edit after the edits nested in it
        item.render(source)
    lines = split_lines(text)
    splices = [(item.start, item.end, item.text) for item in roots]
    imports = set().union(*(edit.imports for edit in edits))
    helpers = set().union(*(edit.helpers for edit in edits))
    insertions = [import_insertion(tree, lines, imports) if imports else None,
                  helper_insertion(tree, lines, helpers) if helpers else None]
    for line, block in filter(None, insertions):
        splices.append((source.starts[line], source.starts[line], block))
    # Insertions sort before a replacement that starts at the same place (stable sort).
    splices.sort(key=lambda s: (s[0], s[1] != s[0]))
    return _splice(text, 0, len(text), splices)


def _splice(text: str, start: int, end: int, splices) -> str:
    """``text[start:end]`` with the sorted, disjoint ``(start, end, new)`` splices applied."""
    out, at = [], start
    for lo, hi, new in splices:
        if lo < at:
            raise ApplyError(f"overlapping edits at character {lo}")
        out += (text[at:lo], new)
        at = hi
    out.append(text[at:end])
    return "".join(out)


def _nest(placed: list[_Placed]) -> list[_Placed]:
    """Link each edit to the edits nested in it; return the outermost ones.

    ``placed`` is sorted by start, longest first, so a parent precedes its children.
    """
    roots: list[_Placed] = []
    stack: list[_Placed] = []
    for item in placed:
        while stack and item.outer_start >= stack[-1].outer_end:
            stack.pop()
        if stack:
            if item.outer_end > stack[-1].outer_end:
                raise ApplyError(f"overlapping edits at character {item.outer_start}")
            stack[-1].children.append(item)
        else:
            roots.append(item)
        stack.append(item)
    return roots


@dataclass
class _Piece:
    """A rendered expression: the text inside its own parentheses, and those parentheses."""

    core: str
    shape: str  # see matcher.shape_of
    lpar: str = ""
    rpar: str = ""

    @property
    def text(self) -> str:
        return self.lpar + self.core + self.rpar

    def as_operand(self) -> str:
        """As part of a larger expression (``$x.sum()``): parenthesised unless atomic."""
        return self.text if self.shape in _ATOMIC or self.lpar else f"({self.text})"

    def as_argument(self) -> str:
        """As a call argument: comment-free parentheses dropped, except where they matter
        (a bare tuple would become several arguments, so it gains them)."""
        if self.shape in _NEEDS_PARENS_AS_ARGUMENT:
            return self.text if self.lpar or self.shape == "enclosed" else f"({self.text})"
        if self.lpar and "#" not in self.lpar + self.rpar:
            return self.core
        return self.text


@dataclass
class _Placed:
    """One edit located in the text: its target, with the target's own parentheses."""

    edit: Edit
    lo: int
    hi: int
    outer_start: int
    outer_end: int
    children: list[_Placed] = field(default_factory=list)
    start: int = 0  # the replaced range and its new text, once rendered
    end: int = 0
    text: str = ""
    piece: _Piece | None = None

    def render(self, source: _Source) -> None:
        edit = self.edit
        starts = [child.outer_start for child in self.children]
        values: dict[str, _Piece | list[str]] = {}
        for name, span in edit.bindings.items():
            if isinstance(span, list):
                values[name] = [self._region(source, starts, *source.argument(s)) for s in span]
            else:
                values[name] = self._bound(source, starts, span, edit.shapes.get(name, "atom"))
        segments, shape = _template(edit.template)
        result = _fill(segments, values, edit.renames)
        if edit.level != "expression":
            self.start, self.end, self.text = self.lo, self.hi, result
            edit.after = result
            return
        lpar, rpar = source.text[self.outer_start:self.lo], source.text[self.hi:self.outer_end]
        if lpar and ("#" in lpar + rpar or shape not in _ATOMIC):
            self.piece = _Piece(result, shape, lpar, rpar)
            self.start, self.end, self.text = self.lo, self.hi, result
        else:
            self.piece = _Piece(result, shape) if shape in _ATOMIC else _Piece(
                result, shape, "(", ")")
            self.start, self.end, self.text = self.outer_start, self.outer_end, self.piece.text
        edit.after = self.piece.text

    def _bound(self, source: _Source, starts: list[int], span, shape: str) -> _Piece:
        lo, hi = source.range(span)
        start, end = source.with_parens(lo, hi)
        index = bisect.bisect_left(starts, start)
        if index < len(starts):
            child = self.children[index]
            if (child.lo, child.hi) == (lo, hi) and child.piece is not None:
                return child.piece  # the operand was itself rewritten
        return _Piece(self._region(source, starts, lo, hi), shape, source.text[start:lo],
                      source.text[hi:end])

    def _region(self, source: _Source, starts: list[int], lo: int, hi: int) -> str:
        """The text from ``lo`` to ``hi`` with the edits nested there applied."""
        first = bisect.bisect_left(starts, lo)
        last = bisect.bisect_left(starts, hi, first)
        inside = [(c.start, c.end, c.text) for c in self.children[first:last]]
        return _splice(source.text, lo, hi, inside)


class _Source:
    """The text being rewritten: line offsets, and the parentheses around expressions."""

    def __init__(self, text: str, tree: ast.Module | None = None):
        self.text, self.tree = text, tree
        self.starts = [0]
        for line in split_lines(text):
            self.starts.append(self.starts[-1] + len(line))
        self._comments: dict[int, int] | None = None
        self._statements: set[int] | None = None

    def range(self, span) -> tuple[int, int]:
        """Character offsets of a (line, column, end line, end column) span."""
        return self.starts[span[0] - 1] + span[1], self.starts[span[2] - 1] + span[3]

    def place(self, edit: Edit) -> _Placed:
        lo, hi = self.range(edit.span)
        start, end = self.with_parens(lo, hi) if edit.level == "expression" else (lo, hi)
        return _Placed(edit, lo, hi, start, end)

    def argument(self, span) -> tuple[int, int]:
        """The range of a call argument: with its grouping parentheses and, when the ")"
        of the call follows, the blanks before it (a ")" on a line of its own stays so)."""
        lo, hi = self.with_parens(*self.range(span))
        after = self._after(hi)
        if after < len(self.text) and self.text[after] == ")" and "#" not in self.text[hi:after]:
            hi = after
        return lo, hi

    def with_parens(self, lo: int, hi: int) -> tuple[int, int]:
        """The range of the expression at ``lo:hi`` with its grouping parentheses."""
        text = self.text
        while True:
            before, after = self._before(lo), self._after(hi)
            if (before < 0 or after >= len(text) or text[before] != "("
                    or text[after] != ")" or self._opens_arguments(before)
                    or self._encloses_with_items(before, after)):
                return lo, hi
            lo, hi = before, after + 1

    def _after(self, at: int) -> int:
        """Where the next token after ``at`` starts (comments and blanks skipped)."""
        text, size = self.text, len(self.text)
        while at < size:
            char = text[at]
            if char in " \t\f\r\n":
                at += 1
            elif char == "\\" and text[at + 1: at + 2] in ("\n", "\r"):
                at += 2
            elif char == "#":  # between tokens, "#" always starts a comment
                while at < size and text[at] not in "\r\n":
                    at += 1
            else:
                return at
        return size

    def _before(self, at: int) -> int:
        """Where the token before ``at`` ends (index of its last character), or -1."""
        text = self.text
        at -= 1
        while at >= 0:
            char = text[at]
            if char in " \t\f":
                at -= 1
            elif char in "\r\n":
                line = bisect.bisect_right(self.starts, at) - 1
                content = text[self.starts[line]:at].rstrip("\r")
                if "#" in content and (column := self._comment_at(line)) is not None:
                    content = content[:column]
                if content.rstrip(" \t\f").endswith("\\"):
                    content = content.rstrip(" \t\f")[:-1]
                at = self.starts[line] + len(content) - 1
            else:
                return at
        return -1

    def _comment_at(self, line: int) -> int | None:
        """Column where a comment starts on 0-based ``line`` (tokenized only when asked)."""
        if self._comments is None:
            self._comments = {}
            for row, column in Comments(self.text).positions:
                self._comments.setdefault(row - 1, column)
        return self._comments.get(line)

    def _encloses_with_items(self, paren: int, closing: int) -> bool:
        """Whether these are the parentheses of `with (...):` around all its items."""
        at = self._after(closing + 1)
        return (self.text[at:at + 1] == ":" and self._word_before(paren) == "with")

    def _word_before(self, at: int) -> str:
        """The name or keyword that ends right before ``at`` ("" if another token does)."""
        end = self._before(at)
        start = end + 1
        while start > 0 and _in_name(self.text[start - 1]):
            start -= 1
        return self.text[start:end + 1]

    def _statement_starts(self, before: int, paren: int) -> set[int]:
        """Offsets where statements start, when a line break separates ``paren`` from the
        token ``before`` it: `(a + b).sum()` on the line after `f(x)` is not a call."""
        if self.tree is None or not any(c in "\r\n" for c in self.text[before:paren]):
            return set()
        if self._statements is None:
            lines = Lines(self.text)
            self._statements = {self.starts[s.lineno - 1] + lines.span(s)[1]
                                for s in statements(self.tree.body)}
        return self._statements

    def _opens_arguments(self, paren: int) -> bool:
        """Whether the "(" at ``paren`` opens a call's (or a class's) arguments."""
        at = self._before(paren)
        if at < 0 or paren in self._statement_starts(at, paren):
            return False
        if self.text[at] in _CALLABLE_ENDS:
            return True
        word = self._word_before(paren)
        return bool(word) and word not in _GROUPING_KEYWORDS


def _in_name(char: str) -> bool:
    return char.isalnum() or char == "_" or not char.isascii()


# -- templates ----------------------------------------------------------------

# A template is compiled once into segments: literal text, and holes that rendering
# fills: ("operand"|"argument", metavariable), ("module", name) for a module the
# edit may respell, and ("arguments", items) for a call whose argument list holds a
# $$$ metavariable (items: ("sequence", metavariable) or a list of segments).


@cache
def _template(text: str) -> tuple[list, str]:
    """The segments of a rewrite template, and the shape of what it produces."""
    source = to_placeholders(text.strip())
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        node = ast.parse(source).body[0]
    lines = Lines(source)
    places = _Source(source)
    start, end = places.range(lines.span(node))
    holes = _holes(node, lines, places)
    shape = shape_of(node, lines) if isinstance(node, ast.expr) else "atom"
    return _segments(source, start, end, holes), shape


def _segments(source: str, start: int, end: int, holes: list) -> list:
    out, at = [], start
    for lo, hi, hole in sorted(holes, key=lambda h: h[0]):
        out += [source[at:lo], hole]
        at = hi
    out.append(source[at:end])
    return [part for part in out if part != ""]


def _holes(node: ast.AST, lines: Lines, places: _Source, context: str = "operand") -> list:
    """``(start, end, hole)`` for every part of ``node`` that rendering fills in."""
    if isinstance(node, ast.Name):
        meta = metavariable_of(node.id)
        if meta is None or meta[1]:
            return []
        return [(*places.range(lines.span(node)), (context, meta[0]))]
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and metavariable_of(node.value.id) is None):
        return [(*places.range(lines.span(node.value)), ("module", node.value.id))]
    if isinstance(node, ast.Call):
        return _call_holes(node, lines, places)
    found = []
    for child in ast.iter_child_nodes(node):
        found += _holes(child, lines, places)
    return found


def _call_holes(call: ast.Call, lines: Lines, places: _Source) -> list:
    found = _holes(call.func, lines, places)
    arguments = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
    ranges = [places.range(lines.span(a)) for a in arguments]
    text = places.text
    close = places.range(lines.span(call))[1] - 1
    trailing_comma = bool(ranges) and "," in text[ranges[-1][1]:close]
    if not trailing_comma and not any(_sequence(a) for a in arguments):
        for argument in arguments:
            found += _argument_holes(argument, lines, places)
        return found
    # The argument list is rebuilt, joined by ", ": each item runs between two commas.
    opening = text.index("(", places.with_parens(*places.range(lines.span(call.func)))[1])
    commas = [text.index(",", end, start) for (_, end), (start, _) in zip(ranges, ranges[1:])]
    items: list = []
    for argument, lo, hi in zip(arguments, [opening, *commas], [*commas, close]):
        if _sequence(argument):
            items.append(("sequence", metavariable_of(argument.id)[0]))
            continue
        if trailing_comma and hi == close:
            hi = text.rindex(",", lo, hi)
        item = text[lo + 1:hi]
        first, last = lo + 1 + len(item) - len(item.lstrip()), hi - len(item) + len(item.rstrip())
        items.append(_segments(text, first, last, _argument_holes(argument, lines, places)))
    return [*found, (opening + 1, close, ("arguments", items))]


def _sequence(argument: ast.AST) -> bool:
    return isinstance(argument, ast.Name) and (meta := metavariable_of(argument.id)) is not None \
        and meta[1]


def _argument_holes(argument: ast.AST, lines: Lines, places: _Source) -> list:
    value = argument.value if isinstance(argument, ast.keyword | ast.Starred) else argument
    return _holes(value, lines, places, "argument")


def _fill(segments: list, values: dict, renames: dict[str, str]) -> str:
    out = []
    for part in segments:
        if isinstance(part, str):
            out.append(part)
        elif part[0] == "operand":
            out.append(values[part[1]].as_operand())
        elif part[0] == "argument":
            out.append(values[part[1]].as_argument())
        elif part[0] == "module":
            out.append(renames.get(part[1], part[1]))
        else:
            items = []
            for item in part[1]:
                if isinstance(item, tuple):  # ("sequence", metavariable)
                    items += values[item[1]]
                else:
                    items.append(_fill(item, values, renames))
            out.append(", ".join(items))
    return "".join(out)
