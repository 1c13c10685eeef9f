"""``x.view(sizes)`` → ``x.reshape(sizes)`` where the sizes are proven numbers.

Wherever ``view`` succeeds, ``reshape`` returns the very same view (same storage, strides and
offset), so values and aliasing are unchanged; only where ``view`` raises (strides that
cannot be viewed) does ``reshape`` copy instead. That difference is observable only by code
that catches the exception, so the rewrite is left out inside the body of a ``try`` with
handlers. ``x.view(dtype)`` and sizes not proven to be Python numbers are left alone.
"""

from __future__ import annotations

import ast

from ...analysis.inference import NUMBER
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..spelling import inside_try


class ViewReshape(Kind):
    name = "view_reshape"
    node_types = (ast.Call,)

    def tokens(self) -> frozenset[str]:
        return frozenset({".view("})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "view" and node.args
                and not node.keywords and context.is_tensor(func.value)):
            return None
        sizes = node.args[0].elts if len(node.args) == 1 and isinstance(
            node.args[0], ast.Tuple | ast.List) else node.args
        if not sizes or not all(context.value_kind(size) == NUMBER for size in sizes):
            return None
        if inside_try(node, context):
            return None
        bindings: Bindings = {"x": func.value}
        bindings |= {f"s{i}": arg for i, arg in enumerate(node.args)}
        arguments = ", ".join(f"$s{i}" for i in range(len(node.args)))
        return Proposal(f"$x.reshape({arguments})", bindings)
