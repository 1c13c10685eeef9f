"""``.item()`` whose value only feeds tensor arithmetic stays a 0-d tensor.

``t.item()`` leaves the graph (a break unless scalar capture is on). When the
Python number it returns only ever meets tensors in arithmetic (possibly after
arithmetic with other numbers), ``_eqrw_item(t)`` returns ``t.item()`` eagerly and,
when traced, the same value as a detached 0-d tensor (detached because ``item()``
cuts autograd, cloned because it copies). Traced results can differ in the last
bits (arithmetic on the number happens in the tensor's dtype, not in float64),
and a float64 0-d tensor meeting an integer tensor promotes to float64.
"""

from __future__ import annotations

import ast

from ..enums import Level
from ..inference import TENSOR
from . import Kind, KindContext, Proposal

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


# The helper its rewrites call, beside the kind (found by kinds.discover):
# name -> (source, helpers it needs), as in helpers.py.
HELPERS = {
    "_eqrw_item": ('''
def _eqrw_item(tensor):
    """``tensor.item()``; traced, the same value as a detached 0-d tensor."""
    if _eqrw_compiling():
        return tensor.detach().reshape(()).clone()
    return tensor.item()
''', ("_eqrw_compiling",)),
}


class ItemScalar(Kind):
    name = "item_scalar"
    node_types = (ast.Call,)

    def tokens(self) -> frozenset[str]:
        return frozenset({".item()"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "item" and not node.args
                and not node.keywords and context.is_tensor(func.value)):
            return None
        if not feeds_tensor_arithmetic(node, context):
            return None
        return Proposal("_eqrw_item($t)", {"t": func.value}, Level.EXPRESSION,
                        frozenset({"_eqrw_item"}))


def feeds_tensor_arithmetic(node: ast.AST, context: KindContext, depth: int = 0) -> bool:
    """The value meets a tensor in + - * / before anything else sees it: directly, after
    arithmetic with Python numbers, or through a local name assigned once."""
    if depth > 8:
        return False
    parent = context.parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC):
        other = context.value_kind(parent.right if parent.left is node else parent.left)
        if other == TENSOR:
            return True
        return other == "number" and feeds_tensor_arithmetic(parent, context, depth + 1)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
            parent.targets[0], ast.Name):
        name = parent.targets[0].id
        uses = [n for n in ast.walk(context.function) if isinstance(n, ast.Name)
                and n.id == name]
        loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
        return len(uses) - len(loads) == 1 and bool(loads) and all(
            feeds_tensor_arithmetic(use, context, depth + 1) for use in loads)
    return False
