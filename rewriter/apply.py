"""Apply edits found by ``matcher.py`` with libcst, preserving everything else.

The libcst tree of the file is indexed by character span; each edit's target and
metavariable bindings are looked up by the spans the ``ast`` pass recorded. One
bottom-up transform replaces targets, so an edit whose binding contains another
edit (``a + b + c``) receives the already rewritten inner node.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import cache

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .layout import dedent, insert_helpers, insert_imports, reindent, split_lines, units_with_edits
from .matcher import Edit, Span
from .pattern import metavariable_of, to_placeholders

_LEVELS = {"expression": cst.BaseExpression, "statement": cst.BaseSmallStatement,
           "compound": cst.BaseCompoundStatement}

_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
          cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp,
          cst.GeneratorExp, cst.Ellipsis)


_EMPTY = cst.Module([])


class ApplyError(Exception):
    """An edit could not be located in the libcst tree (a bug, reported per file)."""


def apply_edits(text: str, edits: list[Edit], tree: ast.Module | None = None) -> str:
    """Return ``text`` with ``edits`` applied and the modules and helpers they need added.

    Only the statements holding edits are parsed with libcst (see ``layout.py``); the
    rest of the text is kept as it is. Any subset of one round's edits can be applied
    (the oracle's rollback does). ``tree`` is ``text`` parsed, when the caller has it.
    """
    lines = split_lines(text)
    for unit, inside in reversed(units_with_edits(tree or ast.parse(text), lines, edits)):
        shift_lines, shift_columns = unit.start - 1, len(unit.indent)
        chunk = dedent(lines[unit.start - 1: unit.end], unit.indent)
        moved = [_shifted(edit, shift_lines, shift_columns) for edit in inside]
        new_chunk = _apply_to_module(chunk, moved)
        for edit, copy in zip(inside, moved):
            edit.after = _as_written(copy.after, unit.indent)
        lines[unit.start - 1: unit.end] = reindent(new_chunk, unit.indent)
    text = "".join(lines)
    imports = set().union(*(edit.imports for edit in edits))
    if imports:
        text = insert_imports(text, imports)
    helpers = set().union(*(edit.helpers for edit in edits))
    if helpers:
        text = insert_helpers(text, helpers)
    return text


def _as_written(after: str, indent: str) -> str:
    """An edit's text as it lands in the file: its continuation lines re-indented like
    the unit around it (the edit was rendered in the unit's dedented text)."""
    first, *rest = split_lines(after) or [""]
    return first + "".join(reindent("".join(rest), indent))


def _shifted(edit: Edit, lines: int, columns: int) -> Edit:
    def move(span: Span) -> Span:
        return (span[0] - lines, span[1] - columns, span[2] - lines, span[3] - columns)

    bindings = {name: [move(s) for s in spans] if isinstance(spans, list) else move(spans)
                for name, spans in edit.bindings.items()}
    return replace(edit, span=move(edit.span), bindings=bindings)


def _apply_to_module(text: str, edits: list[Edit]) -> str:
    wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    spans: dict[Span, list[cst.CSTNode]] = {}
    for node, where in wrapper.resolve(PositionProvider).items():
        span = (where.start.line, where.start.column, where.end.line, where.end.column)
        spans.setdefault(span, []).append(node)
    targets = {id(_locate(spans, edit.span, _LEVELS[edit.level])): edit for edit in edits}
    wanted_ids = {id(_locate(spans, span, cst.BaseExpression)) for edit in edits
                  for span in edit.bindings.values() if not isinstance(span, list)}
    wanted_ids |= {id(_locate(spans, span, cst.Arg)) for edit in edits
                   for spans_ in edit.bindings.values() if isinstance(spans_, list)
                   for span in spans_}
    return wrapper.module.visit(_Applier(targets, wanted_ids, spans)).code


def _locate(spans: dict[Span, list[cst.CSTNode]], span: Span, kind: type) -> cst.CSTNode:
    # ast's span of a parenthesised tuple includes the parentheses; libcst's does not.
    inner = (span[0], span[1] + 1, span[2], span[3] - 1)
    for node in [*spans.get(span, ()), *spans.get(inner, ())]:
        if isinstance(node, kind):
            return node
    raise ApplyError(f"no {kind.__name__} at {span[0]}:{span[1]}-{span[2]}:{span[3]}")


class _Applier(cst.CSTTransformer):
    def __init__(self, targets: dict[int, Edit], wanted: set[int],
                 spans: dict[Span, list[cst.CSTNode]]):
        super().__init__()
        self.targets, self.wanted, self.spans = targets, wanted, spans
        self.updated: dict[int, cst.CSTNode] = {}

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        result = super().on_leave(original, updated)
        edit = self.targets.get(id(original))
        if edit is not None:
            result = self._render(edit, original, result)
        if id(original) in self.wanted:
            self.updated[id(original)] = result
        return result

    def _render(self, edit: Edit, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        values = {}
        for name, span in edit.bindings.items():
            if isinstance(span, list):
                values[name] = [self.updated[id(_locate(self.spans, s, cst.Arg))] for s in span]
            else:
                values[name] = self.updated[id(_locate(self.spans, span, cst.BaseExpression))]
        result = _template(edit.template).visit(_Substitute(values, edit.renames))
        if edit.level == "expression":
            result = _parenthesize_like(result, updated)
            edit.after = _EMPTY.code_for_node(result)
            return result
        if isinstance(result, cst.BaseExpression):
            result = cst.Expr(value=result)
        result = result.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        edit.after = _EMPTY.code_for_node(result)
        if edit.level == "statement":
            return result.with_changes(semicolon=updated.semicolon)
        return cst.SimpleStatementLine(body=[result], leading_lines=updated.leading_lines)


@cache
def _template(text: str) -> cst.CSTNode:
    """A rewrite template as an expression, or else as one small statement."""
    source = to_placeholders(text)
    try:
        return cst.parse_expression(source)
    except cst.ParserSyntaxError:
        line = cst.parse_statement(source + "\n")
        return line.body[0]


class _Substitute(cst.CSTTransformer):
    """Fill a template's placeholders with bound nodes and respell renamed modules."""

    def __init__(self, values: dict[str, object], renames: dict[str, str]):
        super().__init__()
        self.values, self.renames = values, renames

    def _bound(self, node: cst.CSTNode) -> object:
        if isinstance(node, cst.Name) and (meta := metavariable_of(node.value)):
            return self.values[meta[0]]
        return None

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        bound = self._bound(original)
        if isinstance(bound, cst.BaseExpression):
            return bound if _is_atom(bound) else _with_parens(bound)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        base = original.value
        if isinstance(base, cst.Name) and base.value in self.renames:
            return updated.with_changes(value=base.with_changes(value=self.renames[base.value]))
        return updated

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        bound = self._bound(original.value)
        if isinstance(bound, cst.BaseExpression):
            return updated.with_changes(value=_without_plain_parens(bound))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = []
        for before, after in zip(original.args, updated.args):
            bound = self._bound(before.value)
            if isinstance(bound, list):
                args += [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in bound]
            else:
                args.append(after)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)


def _is_atom(node: cst.BaseExpression) -> bool:
    return isinstance(node, _ATOMS) or bool(getattr(node, "lpar", ()))


def _has_comments(parens: list[cst.CSTNode]) -> bool:
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


def _parenthesize_like(result: cst.BaseExpression, original: cst.BaseExpression):
    """Keep the original's parentheses when they hold comments or the result needs them."""
    lpar, rpar = list(original.lpar), list(original.rpar)
    if _has_comments(lpar + rpar) or (lpar and not isinstance(result, _ATOMS)):
        return result.with_changes(lpar=lpar, rpar=rpar)
    return result if isinstance(result, _ATOMS) else _with_parens(result)
