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

from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..values import feeds_tensor_arithmetic, tensor_partners


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


