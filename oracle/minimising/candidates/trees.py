"""What every kind of candidate shares: a program's size, its libcst tree (parsed once and
shared: nodes keep their identity, which ``Replace`` matches on), its statement lists, the
names its module binds, and the one way a candidate is made (nodes replaced by identity)."""

from __future__ import annotations

import ast
import builtins
import functools
import io
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node_or_raise
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper

BUILTINS = frozenset(dir(builtins))
_NOT_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                         tokenize.ENDMARKER, tokenize.COMMENT})


@dataclass(frozen=True)
class Size:
    """How big a program is: statements (ast), tokens (without layout and comments)."""

    statements: int
    tokens: int


def size(text: str) -> Size:
    """The statement and token counts of ``text``."""
    statements = sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(text)))
    tokens = sum(t.type not in _NOT_TOKENS
                 for t in tokenize.generate_tokens(io.StringIO(text).readline))
    return Size(statements, tokens)


# -- trees --------------------------------------------------------------------------------------

# A pass asks for candidates of one program many times (each subset of delta debugging, each
# expression), and libcst trees are immutable: the program's tree, its expression contexts
# and its statement lists are made once and shared (nodes keep their identity, which
# ``Replace`` matches on).
@functools.lru_cache(maxsize=8)
def parse(text: str) -> cst.Module:
    return cst.parse_module(text)


@functools.lru_cache(maxsize=4)
def analysed(text: str) -> tuple[cst.Module, Mapping[cst.CSTNode, ExpressionContext],
                                 list[cst.Module | cst.IndentedBlock]]:
    """The tree of ``text``, the expression context (load, store, del) of its nodes and its
    statement lists (see ``statement_lists``), all of one tree."""
    wrapper = MetadataWrapper(parse(text), unsafe_skip_copy=True)
    module = wrapper.module
    return module, wrapper.resolve(ExpressionContextProvider), statement_lists(module)


class _StatementLists(cst.CSTVisitor):
    """Statement lists in pre-order: the module's, then every indented block."""

    def __init__(self) -> None:
        self.found: list[cst.Module | cst.IndentedBlock] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.found.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.found.append(node)


def statement_lists(module: cst.Module) -> list[cst.Module | cst.IndentedBlock]:
    visitor = _StatementLists()
    module.visit(visitor)
    return visitor.found


def module_names(module: cst.Module) -> frozenset[str]:
    """Names bound at module level by imports, ``def`` and ``class``: never operands."""
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
                        small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname else alias.name
                        names.add(get_full_name_for_node_or_raise(bound).split(".")[0])
    return frozenset(names)


def definition(body: cst.BaseSuite | cst.Module, name: str) -> cst.FunctionDef | None:
    """The function ``name`` defined directly in a module's or class's body (the last one)."""
    statements = body.body if isinstance(body, cst.Module | cst.IndentedBlock) else ()
    found = None
    for statement in statements:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            found = statement
    return found


def number(node: cst.CSTNode) -> int | float | None:
    """The value of an integer or float literal, or of a negated one."""
    if isinstance(node, cst.Integer | cst.Float):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and (
            isinstance(node.expression, cst.Integer | cst.Float)):
        return -node.expression.evaluated_value
    return None


# -- candidates ---------------------------------------------------------------------------------

class Replace(cst.CSTTransformer):
    """Replace nodes by identity (the original tree's nodes) with new nodes or statements."""

    def __init__(self,
                 replacements: dict[int, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]]):
        self.replacements = replacements

    # libcst types on_leave as keeping each node's type; a replacement by identity may be
    # another kind of node (a block's statements for an ``if``), which the parent accepts.
    def on_leave(  # type: ignore[override]
            self, original: cst.CSTNode, updated: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        return self.replacements.get(id(original), updated)


def flattened(module: cst.Module,
              found: Sequence[tuple[cst.CSTNode, Sequence[list[cst.BaseStatement]]]],
              start: int) -> Iterator[tuple[int, str]]:
    """``(position, text)`` for each found statement from ``start`` on, replaced in turn by
    each of its candidate statement lists."""
    for position, (node, replacements) in enumerate(found):
        if position < start:
            continue
        for statements in replacements:
            yield position, module.visit(
                Replace({id(node): cst.FlattenSentinel(statements)})).code


ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString, cst.List, cst.Dict, cst.Tuple)


def in_place_of(node: cst.BaseExpression, operand: cst.BaseExpression) -> cst.BaseExpression:
    """``operand`` standing where ``node`` stood: with ``node``'s parentheses, or its own, or
    new ones when it could bind more loosely than its new surroundings."""
    if operand.lpar:
        return operand
    if node.lpar:
        return operand.with_changes(lpar=node.lpar, rpar=node.rpar)
    if isinstance(operand, ATOMS) and not isinstance(operand, cst.Tuple):
        return operand
    return operand.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
