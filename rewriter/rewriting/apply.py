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
"""

from __future__ import annotations

import ast
import dataclasses
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from functools import cache
from typing import TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState

from ..matching.matcher import Edit
from ..syntax.enums import Level
from ..syntax.lines import newline_of, split_lines
from ..syntax.nodes import Span
from ..syntax.pattern import metavariable_of, to_placeholders
from .layout import Unit, helper_insertion, import_insertion, units_with_edits

# Classes, some abstract: mypy refuses those as type[CSTNode] (python/mypy#4717).
_LEVELS: dict[Level, type] = {
    Level.EXPRESSION: cst.BaseExpression, Level.STATEMENT: cst.BaseSmallStatement,
    Level.COMPOUND: cst.BaseCompoundStatement}
# What a metavariable bound to a statement is filled with (a template line ``$name``).
_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
# What a metavariable is filled with: one node, or (``$$$args``) the arguments.
Filled = cst.CSTNode | list[cst.CSTNode]
Leave = Callable[[cst.CSTNode, cst.CSTNode], cst.CSTNode]  # (original, updated) -> result
_Node = TypeVar("_Node", bound=cst.CSTNode)

_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
          cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp,
          cst.GeneratorExp, cst.Ellipsis)

_EMPTY = cst.Module([])
_SEQUENCES = (list, tuple)
_BLOCK_HEADER = "if 1:"  # a nested unit parses inside this, keeping its own indentation

# Maps a function over chunks in worker processes forked after the call starts (so they
# inherit the module state set before it), giving the results in order.
ChunkApplier = Callable[[tuple[int, int]], list[tuple[str, list[str]]]]
Spread = Callable[[ChunkApplier, list[tuple[int, int]]], Iterable[list[tuple[str, list[str]]]]]
SPREAD_MIN_UNITS = 256  # fewer units than this are applied here: forking costs more
SPREAD_CHUNKS = 64  # chunks per file: small enough for progress and an even share
_shared: tuple[str, list[int], list[Unit]] | None = None  # what forked workers read


class ApplyError(Exception):
    """An edit could not be located in the libcst tree (a bug, reported per file)."""


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
    locator = _Locator(module)
    targets = [locator.want(where(edit.span), _LEVELS[edit.level], target=True)
               for edit in unit.edits]
    bindings: list[dict[str, _Request | list[_Request]]] = [
        {name: [locator.want(where(s), cst.Arg) for s in span]
         if isinstance(span, list) else locator.want(
             where(span), _STATEMENT if name in edit.statements else cst.BaseExpression)
         for name, span in edit.bindings.items()} for edit in unit.edits]
    locator.run()
    applier = _Applier(locator.path)
    for edit, target, bound in zip(unit.edits, targets, bindings):
        applier.targets[id(target.node(unit))] = (edit, {
            name: [r.node(unit) for r in found] if isinstance(found, list) else found.node(unit)
            for name, found in bound.items()})
    applier.wanted = {id(node) for _, values in applier.targets.values()
                      for found in values.values()
                      for node in (found if isinstance(found, list) else [found])}
    emitter = _Emitter(applier.apply(module), applier.results)
    code = emitter.run()
    if not code.startswith(prefix):
        raise ApplyError(f"the block around lines {unit.start}-{unit.end} changed")
    for edit, result in applier.results.values():
        edit.after = _from_keyword(emitter.code_of(result), result)
    if chunk.endswith("\r") and not code.endswith("\r"):
        code += "\r"  # libcst drops a last line ending that is a lone "\r"
    return indent + code[len(prefix):]


def _from_keyword(code: str, node: cst.CSTNode) -> str:
    """The text an edit's span holds: a compound statement's code starts at its keyword
    (libcst emits the lines above it and its indentation as part of the statement)..."""
    if not isinstance(node, cst.BaseCompoundStatement):
        return code
    lines = code.splitlines(keepends=True)[len(node.leading_lines):]
    # ... and ends at its last line's end, as the span does (libcst adds the line break).
    text = "".join(lines).lstrip(" \t")
    return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text


class _Emitter(CodegenState):
    """Generates a unit's new code, noting where each rewritten expression lands, so
    that the text of each edit (``Edit.after``) needs no code generation of its own."""

    def __init__(self, module: cst.Module, results: dict[int, tuple[Edit, cst.CSTNode]]):
        super().__init__(module.default_indent, module.default_newline)
        self.module, self.watched = module, results
        self.marks: dict[int, int] = {}
        self.placed: dict[int, tuple[int, int]] = {}

    def run(self) -> str:
        self.module._codegen(self)
        return "".join(self.tokens)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.watched:
            self.marks[id(node)] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.watched:
            self.placed[id(node)] = (self.marks[id(node)], len(self.tokens))

    def code_of(self, node: cst.CSTNode) -> str:
        """The code of ``node`` as generated here (or alone, if it was not: an operand
        that was given parentheses is a copy)."""
        where = self.placed.get(id(node))
        if where is None:
            return _EMPTY.code_for_node(node)
        return "".join(self.tokens[where[0]:where[1]])


class _Request:
    """A node wanted at one character range: the first of ``node_type`` there, else the first
    just inside (``ast`` counts a tuple's parentheses, libcst does not), else, for an
    argument, the ``Arg`` around an expression there (``f((a))``: ``ast`` spans ``a``)."""

    __slots__ = ("node_type", "target", "exact", "inner", "around")

    def __init__(self, node_type: type | tuple[type, ...], target: bool):  # see _LEVELS
        self.node_type, self.target = node_type, target
        self.exact: cst.CSTNode | None = None
        self.inner: cst.CSTNode | None = None
        self.around: cst.CSTNode | None = None

    def node(self, unit: Unit) -> cst.CSTNode:
        found = self.exact or self.inner or self.around
        if found is None:
            raise ApplyError(f"no {_type_name(self.node_type)} found for an edit in lines "
                             f"{unit.start}-{unit.end}")
        return found


def _type_name(node_type: type | tuple[type, ...]) -> str:
    return (" or ".join(t.__name__ for t in node_type) if isinstance(node_type, tuple)
            else node_type.__name__)


class _Locator(CodegenState):
    """Generates a unit's code once, counting characters, to find the nodes at the ranges
    edits name: the same syntactic positions as libcst's ``PositionProvider``, without
    its line and column objects for every node. Also collects the nodes that enclose a
    target (the path the transform must enter)."""

    def __init__(self, module: cst.Module):
        super().__init__(module.default_indent, module.default_newline)
        self.module = module
        self.offset = 0
        self.stack: list[tuple[cst.CSTNode, int]] = []
        self.ranges: dict[int, tuple[int, int]] = {}
        self.wanted: dict[tuple[int, int], list[tuple[str, _Request]]] = {}
        self.path: set[int] = set()

    def want(self, where: tuple[int, int], node_type: type | tuple[type, ...],
             target: bool = False) -> _Request:
        request = _Request(node_type, target)
        self.wanted.setdefault(where, []).append(("exact", request))
        self.wanted.setdefault((where[0] + 1, where[1] - 1), []).append(("inner", request))
        if node_type is cst.Arg:
            self.wanted[where].append(("around", request))
        return request

    def run(self) -> None:
        self.module._codegen(self)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        self.offset += sum(map(len, self.indent_tokens))

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((node, self.offset))

    def after_codegen(self, node: cst.CSTNode) -> None:
        node, start = self.stack.pop()
        if id(node) not in self.ranges:  # no syntactic position: the whole node's
            where = self.ranges[id(node)] = (start, self.offset)
            if where in self.wanted:
                self._offer(node, where, len(self.stack))

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.ranges[id(start_node)][0]
            if end_node is not None:
                end = self.ranges[id(end_node)][1]
            where = self.ranges[id(node)] = (start, end)
            if where in self.wanted:
                self._offer(node, where, len(self.stack) - 1)  # the node is on the stack

    def _offer(self, node: cst.CSTNode, where: tuple[int, int], depth: int) -> None:
        """``node`` spans ``where``, a wanted range; ``self.stack[:depth]`` are its
        ancestors."""
        for how, request in self.wanted[where]:
            if getattr(request, how) is not None:
                continue
            if how == "around":
                parent = self.stack[depth - 1][0] if depth else None
                if isinstance(node, cst.BaseExpression) and isinstance(parent, cst.Arg):
                    request.around = parent
                continue
            if isinstance(node, request.node_type):
                setattr(request, how, node)
                if request.target:
                    self.path.add(id(node))
                    self._enter(depth)

    def _enter(self, depth: int) -> None:
        """Mark the ancestors as on the path (they are marked root first, so the first one
        found marked has its own ancestors marked)."""
        for index in range(depth - 1, -1, -1):
            key = id(self.stack[index][0])
            if key in self.path:
                return
            self.path.add(key)


class _Applier:
    """Replaces targets bottom-up, rebuilding only the nodes that enclose one."""

    def __init__(self, path: set[int]):
        self.path = path
        self.targets: dict[int, tuple[Edit, dict[str, Filled]]] = {}
        self.wanted: set[int] = set()
        self.updated: dict[int, cst.CSTNode] = {}
        self.results: dict[int, tuple[Edit, cst.CSTNode]] = {}  # what Edit.after shows

    def apply(self, module: cst.Module) -> cst.Module:
        # A target's own fields that rendering reads (parentheses, ";", comments above a
        # statement) never hold an edit: the target needs no rebuilding.
        return _rebuild(module, self.path, self.leave, self.targets.keys())

    def leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        # (typed If | Else | None, but an edit may have put any statement there)
        orelse: cst.CSTNode | None = updated.orelse if isinstance(updated, cst.If) else None
        if isinstance(updated, cst.If) and isinstance(orelse, cst.BaseStatement) and not (
                isinstance(orelse, cst.If)):
            # An `elif` replaced by another statement: it stays the `else` branch (libcst
            # would print it after the `if`, run whatever the test says).
            block = updated.body
            updated = updated.with_changes(orelse=cst.Else(body=cst.IndentedBlock(
                body=[orelse], indent=block.indent if isinstance(block, cst.IndentedBlock)
                else None)))
        test = getattr(updated, "test", None)
        if (isinstance(original, cst.If | cst.While) and isinstance(test, cst.BaseExpression)
                and id(test) in self.results and test.lpar and not original.test.lpar):
            # A rewritten test needs no parentheses of its own: `if <test>:` delimits it.
            bare = test.with_changes(lpar=(), rpar=())
            self.results[id(bare)] = (self.results.pop(id(test))[0], bare)
            updated = updated.with_changes(test=bare)
        found = self.targets.get(id(original))
        if found is not None and id(original) in self.wanted:
            self.updated[id(original)] = updated  # a template may hold its target whole
        result = updated if found is None else self._render(*found, updated)
        if id(original) in self.wanted:
            self.updated[id(original)] = result
        return result

    def _current(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.updated.get(id(node), node)  # rewritten if an edit lay inside

    def _render(self, edit: Edit, bound: dict[str, Filled],
                updated: cst.CSTNode) -> cst.CSTNode:
        values: dict[str, Filled] = {
            name: [self._current(n) for n in node] if isinstance(node, list)
            else self._current(node) for name, node in bound.items()}
        template, path = _template(edit.template)
        leave = _Substitute(values, edit.renames).leave
        result = leave(template, _rebuild(template, path, leave))
        if edit.level == Level.EXPRESSION:
            if not (isinstance(result, cst.BaseExpression)
                    and isinstance(updated, cst.BaseExpression)):
                raise ApplyError(f"rule {edit.rule.id}: an expression edit whose target or "
                                 "rewrite is not an expression")
            result = _parenthesize_like(result, updated)
            self.results[id(result)] = (edit, result)
            return result
        if isinstance(result, cst.BaseCompoundStatement):
            if not isinstance(updated, cst.BaseCompoundStatement):
                raise ApplyError(f"rule {edit.rule.id}: a compound rewrite of a "
                                 f"{type(updated).__name__}")
            result = _in_place_of(result, updated)
            self.results[id(result)] = (edit, result)
            return result
        if isinstance(result, cst.BaseExpression):
            result = cst.Expr(value=result)
        if not isinstance(result, cst.BaseSmallStatement):
            raise ApplyError(f"rule {edit.rule.id}: a rewrite that is not a small statement")
        result = result.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        self.results[id(result)] = (edit, result)  # not watched: its ";" may differ
        if edit.level == Level.STATEMENT and isinstance(updated, cst.BaseSmallStatement):
            return result.with_changes(semicolon=updated.semicolon)
        if edit.level == Level.COMPOUND and isinstance(updated, cst.BaseCompoundStatement):
            return cst.SimpleStatementLine(body=[result], leading_lines=updated.leading_lines)
        raise ApplyError(f"rule {edit.rule.id}: a {edit.level} edit on a "
                         f"{type(updated).__name__}")


def _rebuild(node: _Node, path: AbstractSet[int], leave: Leave,
             replaced: AbstractSet[int] = frozenset()) -> _Node:
    """``node`` with the children in ``path`` rebuilt bottom-up, each passed through
    ``leave(original, updated)``: a libcst transform that enters only those nodes.

    Nodes in ``replaced`` are about to be replaced whole: their children are still
    visited (an edit may lie inside), but they are not rebuilt themselves.
    """
    changes: dict[str, object] = {}
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if id(value) in path:
            changes[name] = leave(value, _rebuild(value, path, leave, replaced))
        elif type(value) in _SEQUENCES and any(id(item) in path for item in value):
            changes[name] = type(value)(
                leave(item, _rebuild(item, path, leave, replaced)) if id(item) in path
                else item for item in value)
    return node.with_changes(**changes) if changes and id(node) not in replaced else node


@cache
def _child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(node_type))


def _in_place_of(result: cst.BaseCompoundStatement,
                 updated: cst.BaseCompoundStatement) -> cst.BaseCompoundStatement:
    """A compound template's statement with the blank lines and comments before, and the
    block indentation of, the statement it replaces."""
    indent = updated.body.indent if isinstance(updated.body, cst.IndentedBlock) else None
    if isinstance(result.body, cst.IndentedBlock):
        result = result.with_changes(body=result.body.with_changes(indent=indent))
    orelse = getattr(result, "orelse", None)  # a template's ``else:`` block, indented alike
    if isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock):
        result = result.with_changes(orelse=orelse.with_changes(
            body=orelse.body.with_changes(indent=indent)))
    return result.with_changes(leading_lines=updated.leading_lines)


@cache
def _template(text: str) -> tuple[cst.CSTNode, frozenset[int]]:
    """A rewrite template as an expression, or else as one small statement, and the ids
    of its nodes that hold something to fill in (the only ones substitution enters)."""
    source = to_placeholders(text)
    node: cst.BaseExpression | cst.BaseSmallStatement | cst.BaseCompoundStatement
    try:
        node = cst.parse_expression(source)
    except cst.ParserSyntaxError:
        statement = cst.parse_statement(source + "\n")
        # A compound template (a loop rebuilt whole) stays a compound statement.
        node = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else statement
    collector = _HoleFinder()
    node.visit(collector)
    return node, frozenset(collector.path)


class _HoleFinder(cst.CSTVisitor):
    """The nodes above a placeholder or a module name (``torch.``) a file may respell."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[int] = []
        self.path: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (isinstance(node, cst.Name) and metavariable_of(node.value)) or (
                isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
            self.path.update(self.stack)
            self.path.add(id(node))
        self.stack.append(id(node))
        return True

    def on_leave(self, original: cst.CSTNode) -> None:
        self.stack.pop()


class _Substitute:
    """Fill a template's placeholders with bound nodes and respell renamed modules."""

    def __init__(self, values: dict[str, Filled], renames: dict[str, str]):
        self.values, self.renames = values, renames

    def leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        # ``updated`` is ``original`` rebuilt: of the same type.
        if isinstance(original, cst.Name) and isinstance(updated, cst.Name):
            return self._name(original, updated)
        if isinstance(original, cst.Attribute) and isinstance(updated, cst.Attribute):
            return self._attribute(original, updated)
        if isinstance(original, cst.Arg) and isinstance(updated, cst.Arg):
            return self._arg(original, updated)
        if isinstance(original, cst.Call) and isinstance(updated, cst.Call):
            return self._call(original, updated)
        if isinstance(original, cst.SimpleStatementLine):
            return self._statement(original, updated)
        return updated

    def _bound(self, node: cst.CSTNode) -> Filled | None:
        if isinstance(node, cst.Name) and (meta := metavariable_of(node.value)):
            return self.values[meta[0]]
        return None

    def _name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        bound = self._bound(original)
        if isinstance(bound, cst.BaseExpression):
            return bound if _is_atom(bound) else _with_parens(bound)
        return updated

    def _statement(self, original: cst.SimpleStatementLine,
                   updated: cst.CSTNode) -> cst.CSTNode:
        """A template line ``$name`` whose metavariable holds a statement: that statement
        (a compound one whole, with the comments inside it; a small one on this line)."""
        body = original.body
        if not (len(body) == 1 and isinstance(body[0], cst.Expr)):
            return updated
        bound = self._bound(body[0].value)
        if isinstance(bound, cst.BaseCompoundStatement):
            return bound.with_changes(leading_lines=())
        if isinstance(bound, cst.BaseSmallStatement):
            return cst.SimpleStatementLine(
                body=[bound.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
        return updated

    def _attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        base = original.value
        if isinstance(base, cst.Name) and base.value in self.renames:
            return updated.with_changes(value=base.with_changes(value=self.renames[base.value]))
        return updated

    def _arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        bound = self._bound(original.value)
        if isinstance(bound, cst.BaseExpression):
            return updated.with_changes(value=_without_plain_parens(bound))
        return updated

    def _call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args: list[cst.Arg] = []
        spliced = False
        for before, after in zip(original.args, updated.args):
            bound = self._bound(before.value)
            if isinstance(bound, list):
                args += [_as_arg(a).with_changes(comma=cst.MaybeSentinel.DEFAULT)
                         for a in bound]
                spliced = True
            else:
                args.append(after)
        if not spliced and (not args or args[-1].comma is cst.MaybeSentinel.DEFAULT):
            return updated  # nothing to change (most templates)
        if len(args) > 1:  # `f(x for x in y)`: a generator among others needs parentheses
            args = [a.with_changes(value=_with_parens(a.value))
                    if isinstance(a.value, cst.GeneratorExp) and not a.value.lpar else a
                    for a in args]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)


def _as_arg(node: cst.CSTNode) -> cst.Arg:
    """A node bound to ``$$$args``: the locator found it as an argument."""
    if not isinstance(node, cst.Arg):
        raise ApplyError(f"a sequence metavariable bound a {type(node).__name__}")
    return node


def _is_atom(node: cst.BaseExpression) -> bool:
    return isinstance(node, _ATOMS) or bool(getattr(node, "lpar", ()))


def _has_comments(parens: Sequence[cst.CSTNode]) -> bool:
    return any("#" in _EMPTY.code_for_node(p) for p in parens)


def _without_plain_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """The node as a call argument: comment-free parentheses dropped, except where they
    matter (a bare tuple would become several arguments, so it gains them)."""
    keep = (cst.Tuple, cst.GeneratorExp, cst.Yield, cst.NamedExpr)
    if isinstance(node, keep):
        return node if node.lpar else _with_parens(node)
    if node.lpar and not _has_comments([*node.lpar, *node.rpar]):
        return node.with_changes(lpar=[], rpar=[])
    return node


def _with_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _parenthesize_like(result: cst.BaseExpression,
                       original: cst.BaseExpression) -> cst.BaseExpression:
    """Keep the original's parentheses when they hold comments or the result needs them."""
    lpar, rpar = list(original.lpar), list(original.rpar)
    if _has_comments([*lpar, *rpar]) or (lpar and not isinstance(result, _ATOMS)):
        return result.with_changes(lpar=lpar, rpar=rpar)
    return result if isinstance(result, _ATOMS) else _with_parens(result)
