"""``.item()`` whose value only feeds tensor arithmetic stays a 0-d tensor.

``t.item()`` leaves the graph (a break unless scalar capture is on). When the
Python number it returns is only ever combined with tensors, the same value as a
detached 0-d tensor computes the same results: ``t.detach().reshape(()).clone()``
(detached because ``item()`` cuts autograd, cloned because ``item()`` copies).
One difference remains and is why this is a kind and not a template: a float64
0-d tensor combined with an integer tensor promotes to float64, where the Python
float gave the default dtype.
"""

from __future__ import annotations

import ast

from ..inference import TENSOR
from . import Kind, KindContext, Proposal

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


class ItemScalar(Kind):
    name = "item_scalar"
    node_types = (ast.Call,)

    def tokens(self) -> frozenset[str]:
        return frozenset({".item()"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "item" and not node.args
                and not node.keywords and context.is_tensor(func.value)):
            return None
        if not _feeds_tensor_arithmetic(node, context):
            return None
        return Proposal("$t.detach().reshape(()).clone()", {"t": func.value})


def _feeds_tensor_arithmetic(node: ast.AST, context: KindContext) -> bool:
    """The value is used directly, or through one local name, only beside tensors."""
    parent = context.parents.get(node)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
            parent.targets[0], ast.Name):
        name = parent.targets[0].id
        uses = [n for n in ast.walk(context.function) if isinstance(n, ast.Name)
                and n.id == name]
        stores = [n for n in uses if not isinstance(n.ctx, ast.Load)]
        loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
        return len(stores) == 1 and bool(loads) and all(
            beside_tensor(use, context) for use in loads)
    return beside_tensor(node, context)


def beside_tensor(node: ast.AST, context: KindContext) -> bool:
    """``node`` is an operand of + - * / whose other operand is a proven tensor."""
    parent = context.parents.get(node)
    if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC)):
        return False
    other = parent.right if parent.left is node else parent.left
    return context.kind(other) == TENSOR
