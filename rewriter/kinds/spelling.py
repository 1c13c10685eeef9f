"""Small proofs shared by the equivalence kinds: how ``torch`` is spelled, literal values,
and whether an operand may be evaluated more than once.

Kinds insert their templates verbatim (template rules get imports and renames; kinds do
not), so a kind that writes ``torch.`` must first check that the module imports torch
under that very name and that nothing local shadows it.
"""

from __future__ import annotations

import ast

from . import KindContext


def torch_spelled(context: KindContext) -> bool:
    """``torch`` in a template means the torch module here."""
    inference = context.guards.inference
    return (context.facts.imports.local_name_of("torch") == "torch"
            and inference.lookup("torch", context.guards.chain) in (None, "object"))


def number_literal(node: ast.AST) -> int | float | None:
    """The value of ``3``, ``-2``, ``0.5`` (not bools), else None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant):
        value = node.value
        if type(value) is int or type(value) is float:  # not bool, a subclass of int
            return sign * value
    return None


def repeatable(node: ast.AST, context: KindContext) -> bool:
    """An operand a template may evaluate twice: a plain name (reading it has no effect)."""
    return isinstance(node, ast.Name)


def inside_try(node: ast.AST, context: KindContext) -> bool:
    """Whether ``node`` sits in the body of a ``try`` with handlers (where an exception it
    raises is observed, so turning a raise into a result changes behaviour)."""
    parents = context.parents
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Try) and child in parent.body and parent.handlers:
            return True
        child, parent = parent, parents.get(parent)
    return False
