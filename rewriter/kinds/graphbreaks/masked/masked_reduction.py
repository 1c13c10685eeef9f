"""Reductions of a boolean-masked selection, without a dynamic shape.

``x[mask].sum()`` (``mean``, ``max``, ``min``, ``amax``, ``amin``, ``numel``) and
``x[torch.nonzero(mask, as_tuple=True)]...`` select a data-dependent number of
elements, which breaks the graph. Reduced right away, the same value comes from
``torch.where`` over the whole tensor: ``_eqrw_masked`` does that when traced and
the mask has x's shape, keeps the original expression otherwise (and always
eagerly), raises like the original on an empty max/min, and returns NaN for the
mean of nothing like the original. ``numel`` is rewritten only where its value
meets a tensor in arithmetic, since it becomes a 0-d tensor when traced.

When ``x`` or the mask is proven a tensor only with unannotated parameters taken as
tensors (``x[x > 0].sum()`` in ``forward(self, x)``), the same rewrite is made: the helper
takes the torch.where path only when traced and both are tensors, and otherwise evaluates
the original expression, so numbers, lists and numpy arrays get exactly the original's
result or exception. A parameter named like a mask (``mask``, ``attention_mask``) is taken
as the mask there: the helper checks its dtype when traced. ``numel`` is left alone: its
traced value, a tensor, would meet a number or an array where the original gave an int.
"""

from __future__ import annotations

import ast

from ....syntax.enums import Level
from ... import Kind, KindContext, Proposal
from ...conditions import is_boolean
from ...values import feeds_tensor_arithmetic

REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "numel"})


class MaskedReduction(Kind):
    name = "masked_reduction"
    node_types = (ast.Call,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"]." + name for name in REDUCTIONS})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in REDUCTIONS and not node.args
                and not node.keywords and isinstance(func.value, ast.Subscript)):
            return None
        selection = func.value
        if func.attr == "numel" and not feeds_tensor_arithmetic(node, context):
            return None
        mask = _mask_of(selection.slice, context)
        if mask is None or not context.is_tensor(selection.value):
            mask = _assumed_mask(node, selection, context)
        if mask is None:
            return None
        return Proposal(f"_eqrw_masked($x, $mask, {func.attr!r})",
                        {"x": selection.value, "mask": mask}, Level.EXPRESSION,
                        frozenset({"_eqrw_masked"}))


def _assumed_mask(node: ast.Call, selection: ast.Subscript,
                  context: KindContext) -> ast.expr | None:
    """The mask of ``x[mask].<reduction>()`` proven with unannotated parameters taken as
    tensors (the helper checks x and the mask at run time), or a parameter named like a
    mask; None for ``numel`` (see the module's docstring) or when nothing is proven."""
    assumed = context.assuming()
    if assumed is None or not isinstance(node.func, ast.Attribute) or (
            node.func.attr == "numel") or not assumed.is_tensor(selection.value):
        return None
    mask = _mask_of(selection.slice, assumed)
    if mask is None and _mask_parameter(selection.slice, context):
        mask = selection.slice
    return mask


def _mask_parameter(index: ast.expr, context: KindContext) -> bool:
    """An unannotated parameter named like a mask, never rebound in the function."""
    if not (isinstance(index, ast.Name) and "mask" in index.id.lower()
            and context.parameters_behind([index]) == [index.id]):
        return False
    return not any(isinstance(n, ast.Name) and n.id == index.id
                   and not isinstance(n.ctx, ast.Load) for n in context.walk())


def _mask_of(index: ast.expr, context: KindContext) -> ast.expr | None:
    """The mask an index selects with: ``mask`` or ``torch.nonzero(mask, as_tuple=True)``."""
    if isinstance(index, ast.Call) and _is_nonzero_as_tuple(index, context):
        if index.args:
            inner = index.args[0]
        elif isinstance(index.func, ast.Attribute):  # `mask.nonzero(as_tuple=True)`
            inner = index.func.value
        else:
            return None
        return inner if is_boolean(inner, context) else None
    return index if is_boolean(index, context) else None


def _is_nonzero_as_tuple(call: ast.Call, context: KindContext) -> bool:
    as_tuple = any(k.arg == "as_tuple" and isinstance(k.value, ast.Constant)
                   and k.value.value is True for k in call.keywords)
    if context.facts.imports.resolve(call.func) == "torch.nonzero":
        return as_tuple and len(call.args) == 1
    return (as_tuple and isinstance(call.func, ast.Attribute) and call.func.attr == "nonzero"
            and not call.args and context.is_tensor(call.func.value))
