"""Tables for walking ``ast`` trees fast: which fields of each node type hold nodes.

``ast.walk`` and ``ast.iter_child_nodes`` look at every field of every node and test
each value; the matcher and the inference walk millions of nodes, so they use these
tables instead (built once, at import).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Protocol


def _node_types(base: type[ast.AST] = ast.AST) -> Iterator[type[ast.AST]]:
    for node_type in base.__subclasses__():
        yield node_type
        yield from _node_types(node_type)


Span = tuple[int, int, int, int]  # start line, start column, end line, end column (chars)


class Positioned(Protocol):
    """A node with a position in the source: a statement, an expression, a keyword
    argument... (``ast.parse`` sets every end; typeshed allows None for hand-built nodes)."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


def end_line(node: ast.stmt | ast.expr) -> int:
    """``node``'s last line. ``ast.parse`` sets it on every node it makes; typeshed says
    ``int | None`` for nodes built by hand, which the rewriter never positions."""
    end = node.end_lineno
    if end is None:
        raise ValueError(f"{type(node).__name__} node has no position (not from ast.parse)")
    return end


NODE_TYPES = frozenset(_node_types())
# Fields that never hold a node (names, flags, operators, contexts), by name; and two
# that hold a scalar in some node types only.
_SCALAR_FIELDS = frozenset({"ctx", "op", "kind", "type_comment", "id", "attr", "arg", "name",
                            "asname", "module", "level", "is_async", "conversion", "simple",
                            "rest", "kwd_attrs", "tag"})
# For each node type, the fields that may hold nodes, last field first (a stack pops
# them in source order).
CHILD_FIELDS = {t: tuple(reversed([
    f for f in t._fields if f not in _SCALAR_FIELDS
    and not (f == "value" and t in (ast.Constant, ast.MatchSingleton))
    and not (f == "names" and t in (ast.Global, ast.Nonlocal))])) for t in NODE_TYPES}
# Node types without children: names, constants, operators, contexts, pass...
CHILDLESS = frozenset(t for t in NODE_TYPES if not CHILD_FIELDS[t])


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, if it has any."""
    decorators: list[ast.expr] | None = getattr(statement, "decorator_list", None)
    return decorators[0].lineno if decorators else statement.lineno


def descendants(node: ast.AST) -> list[ast.AST]:
    """``node`` and every node under it, in no particular order: what ``ast.walk`` yields
    less the context and operator singletons (``Load``, ``Add``...), about twice as fast."""
    found = []
    stack = [node]
    while stack:
        node = stack.pop()
        found.append(node)
        for field in CHILD_FIELDS.get(type(node), ()):
            value = getattr(node, field)
            if type(value) is list:
                stack += [v for v in value if v is not None]
            elif value is not None and type(value) in NODE_TYPES:
                stack.append(value)
    return found


def walk_in_order(node: ast.AST) -> list[ast.AST]:
    """What ``list(ast.walk(node))`` is, in the same breadth-first order and with the same
    nodes (contexts and operators included), without a generator per node: about 1.3 times
    as fast, for the walks whose order their users keep."""
    found = [node]
    for parent in found:  # grows while it is read: each node's children join the end
        found += children(parent)
    return found


def children(node: ast.AST) -> list[ast.AST]:
    """What ``list(ast.iter_child_nodes(node))`` is, without the generators."""
    found: list[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found += [item for item in value if isinstance(item, ast.AST)]
    return found


def names_read(node: ast.AST) -> Iterator[str]:
    """Every name in ``node`` (``ast.Name`` ids, in no particular order)."""
    return (n.id for n in descendants(node) if type(n) is ast.Name)


# Fields that hold blocks of statements (or except handlers and match cases, which hold
# blocks), in the order ast lists them.
_BLOCK_OWNERS: list[type[ast.AST]] = [*ast.stmt.__subclasses__(), ast.ExceptHandler,
                                      ast.match_case]
BLOCK_FIELDS = {node_type: tuple(f for f in node_type._fields
                                 if f in ("body", "handlers", "orelse", "finalbody", "cases"))
                for node_type in _BLOCK_OWNERS}
