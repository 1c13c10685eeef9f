"""``.item()`` whose value only feeds tensor arithmetic stays a 0-d tensor.

``t.item()`` leaves the graph (a break unless scalar capture is on). When the
Python number it returns only ever meets tensors in arithmetic (possibly after
arithmetic with other numbers), ``_eqrw_item(t)`` returns ``t.item()`` eagerly and,
when traced, the same value as a detached 0-d tensor (detached because ``item()``
cuts autograd, cloned because it copies). Traced results can differ in the last
bits (arithmetic on the number happens in the tensor's dtype, not in float64),
and a float64 0-d tensor meeting an integer tensor promotes to float64.

When the proof holds only with unannotated parameters taken as tensors (``scale =
x.abs().max().item(); return x / scale``), the rewrite names the parameters behind the
tensor and the operands the value meets, ``_eqrw_item(t, (x,))``: the 0-d tensor only when
traced and they are all tensors, else ``t.item()``, so numbers, lists and numpy arrays
meet the Python number the original gave them.
"""

from __future__ import annotations

import ast

from ...analysis.inference import TENSOR
from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


# The helper its rewrites call, beside the kind (found by kinds.discover):
# name -> (source, helpers it needs), as in helpers.py.
HELPERS = {
    "_eqrw_item": ('''
def _eqrw_item(tensor, parameters=()):
    """``tensor.item()``; traced, the same value as a detached 0-d tensor, when it is a
    tensor and so are the parameters a rewrite took for tensors."""
    if (_eqrw_compiling() and isinstance(tensor, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
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
                and not node.keywords):
            return None
        if context.is_tensor(func.value) and feeds_tensor_arithmetic(node, context):
            return Proposal("_eqrw_item($t)", {"t": func.value}, Level.EXPRESSION,
                            frozenset({"_eqrw_item"}))
        return _dispatched(node, func.value, context)


def _dispatched(node: ast.Call, tensor: ast.expr, context: KindContext) -> Proposal | None:
    """``_eqrw_item(t, (params,))`` when ``t`` and the tensors its value meets are proven
    only with unannotated parameters taken as tensors: those parameters are checked."""
    assumed = context.assuming()
    if assumed is None or not assumed.is_tensor(tensor):
        return None
    partners = tensor_partners(node, assumed)
    parameters = context.parameters_behind([tensor, *partners]) if partners else []
    if not parameters:
        return None
    names = ", ".join(parameters) + ("," if len(parameters) == 1 else "")
    return Proposal(f"_eqrw_item($t, ({names}))", {"t": tensor}, Level.EXPRESSION,
                    frozenset({"_eqrw_item"}))


def feeds_tensor_arithmetic(node: ast.AST, context: KindContext) -> bool:
    """The value meets a tensor in + - * / before anything else sees it: directly, after
    arithmetic with Python numbers, or through a local name assigned once."""
    return bool(tensor_partners(node, context))


def tensor_partners(node: ast.AST, context: KindContext, depth: int = 0) -> list[ast.expr]:
    """The tensors the value of ``node`` meets in + - * / (see ``feeds_tensor_arithmetic``),
    or nothing when any of its uses meets something else first."""
    if depth > 8:
        return []
    parent = context.parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC):
        other = parent.right if parent.left is node else parent.left
        if context.value_kind(other) == TENSOR:
            return [other]
        if context.value_kind(other) == "number":
            return tensor_partners(parent, context, depth + 1)
        return []
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
            parent.targets[0], ast.Name):
        name = parent.targets[0].id
        uses = [n for n in context.walk() if isinstance(n, ast.Name)
                and n.id == name]
        loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
        if len(uses) - len(loads) != 1:
            return []
        partners = [tensor_partners(use, context, depth + 1) for use in loads]
        return [p for found in partners for p in found] if all(partners) else []
    return []
