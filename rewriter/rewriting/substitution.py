"""An edit's rewrite template, filled and put in place of its target, in a libcst tree.

``Applier`` rebuilds a unit's tree bottom-up, entering only the nodes that enclose a target
(the path ``codegen.Locator`` collected), and replaces each target by its edit's template
with the nodes its metavariables bound filled in (``$$$args`` spliced into a call, a
statement bound to ``$name`` put on its own line, renamed modules respelled), keeping the
parentheses, comments and blank lines the target had where the result needs them. A
binding that holds another edit's target receives the already rewritten node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from typing import TypeVar

import libcst as cst

from ..matching.matcher import Edit
from ..syntax.enums import Level
from ..syntax.pattern import metavariable_of, to_placeholders

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


class TemplateError(Exception):
    """A template that does not fit its target, or a binding that does not fit its
    placeholder (``apply.py`` reports it as an ``ApplyError``)."""


class Applier:
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
                raise TemplateError(f"rule {edit.rule.id}: an expression edit whose target or "
                                 "rewrite is not an expression")
            result = _parenthesize_like(result, updated)
            self.results[id(result)] = (edit, result)
            return result
        if isinstance(result, cst.BaseCompoundStatement):
            if not isinstance(updated, cst.BaseCompoundStatement):
                raise TemplateError(f"rule {edit.rule.id}: a compound rewrite of a "
                                 f"{type(updated).__name__}")
            result = _in_place_of(result, updated)
            self.results[id(result)] = (edit, result)
            return result
        if isinstance(result, cst.BaseExpression):
            result = cst.Expr(value=result)
        if not isinstance(result, cst.BaseSmallStatement):
            raise TemplateError(f"rule {edit.rule.id}: a rewrite that is not a small statement")
        result = result.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        self.results[id(result)] = (edit, result)  # not watched: its ";" may differ
        if edit.level == Level.STATEMENT and isinstance(updated, cst.BaseSmallStatement):
            return result.with_changes(semicolon=updated.semicolon)
        if edit.level == Level.COMPOUND and isinstance(updated, cst.BaseCompoundStatement):
            return cst.SimpleStatementLine(body=[result], leading_lines=updated.leading_lines)
        raise TemplateError(f"rule {edit.rule.id}: a {edit.level} edit on a "
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
        raise TemplateError(f"a sequence metavariable bound a {type(node).__name__}")
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
