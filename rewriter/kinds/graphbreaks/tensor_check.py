"""``torch._check_tensor_all(cond)``, the check libraries call with a tensor condition.

transformers 5.x validates inputs inside ``forward`` through a helper
(``torch_compilable_check``) that, while tracing, calls ``torch._check_tensor_all(cond)``
(or ``torch._check_tensor_all_with(error, cond, message)`` when eager). Under Dynamo that
reads the condition with ``.item()``: a graph break in every model that checks its inputs.

The call becomes ``_eqrw_check_tensor_all(<the function>, <position of cond>, <args>)``.
Eagerly it calls the original function with the original arguments: the same check, the
same exception type and message. Traced, with a tensor condition, it checks inside the
graph with ``torch._assert_async(cond.all(), message)``, a RuntimeError at run time instead
of the original exception type, with a fixed message (torch takes the message as a
callable, which the trace does not call: it may format tensors).
"""

from __future__ import annotations

import ast

from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal

# Each check and the position of its condition among the positional arguments.
_CHECKS = {"torch._check_tensor_all": 0, "torch._check_tensor_all_with": 1}


class TensorCheck(Kind):
    name = "tensor_check"
    node_types = (ast.Call,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"_check_tensor_all"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call) or any(k.arg != "message" for k in node.keywords):
            return None
        at = _CHECKS.get(context.facts.imports.resolve(node.func) or "")
        if at is None or not at < len(node.args) <= at + 2 or any(
                isinstance(a, ast.Starred) for a in node.args):
            return None
        bindings: Bindings = {"f": node.func, "a": [*node.args, *node.keywords]}
        return Proposal(f"_eqrw_check_tensor_all($f, {at}, $$$a)", bindings,
                        helpers=frozenset({"_eqrw_check_tensor_all"}))
