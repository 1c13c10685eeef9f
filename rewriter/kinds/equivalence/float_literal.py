"""``x * 2`` → ``x * 2.0`` on floating tensors: the same computation with a float constant.

A Python int and a Python float scalar give the same result dtype and the same values on a
floating tensor (both become the tensor's dtype; integers up to 256 are exact in every
floating dtype, bfloat16 included), but they reach the compiler as different constants, and
``x * 0`` → ``x * 0.0`` made real miscompilations disappear. Integer and bool tensors keep
the int (a float would promote them), so the rewrite tests the dtype where it runs:
``(x * 2.0 if x.is_floating_point() else torch.mul(x, 2))``, a static test under Dynamo.
The else branch calls the function the operator dispatches to, so the output does not match
again. Only a plain name is tested and used twice.
"""

from __future__ import annotations

import ast

from .. import Kind, KindContext, Proposal
from ..spelling import number_literal, repeatable, torch_spelled

_FUNCTIONS = {ast.Add: ("+", "add"), ast.Sub: ("-", "sub"), ast.Mult: ("*", "mul"),
              ast.Div: ("/", "div"), ast.Pow: ("**", "pow")}
LARGEST = 256  # integers beyond 2**8 are not all exact in bfloat16


class FloatLiteral(Kind):
    name = "float_literal"
    node_types = (ast.BinOp,)
    node_keys = tuple((ast.BinOp, op) for op in _FUNCTIONS)

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.BinOp):  # node_types: only binary operations are offered
            return None
        spelled = _FUNCTIONS.get(type(node.op))
        value = number_literal(node.right)
        if (spelled is None or type(value) is not int or abs(value) > LARGEST
                or not repeatable(node.left, context) or not context.is_tensor(node.left)
                or not torch_spelled(context)):
            return None
        operator, function = spelled
        number = f"({value}.0)" if value < 0 else f"{value}.0"
        template = (f"($x {operator} {number} if $x.is_floating_point() "
                    f"else torch.{function}($x, {value}))")
        return Proposal(template, {"x": node.left})
