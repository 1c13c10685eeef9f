"""``torch.sin(x)`` → ``torch.sin(x.mT).mT`` on contiguous tensors: a transpose round trip.

A pointwise op commutes with a transpose: each element is computed from the same input
element, by the same kernel (TensorIterator walks both layouts in memory order), so values
are bit-identical; for a contiguous input of rank >= 2 whose last two dimensions are longer
than 1 the result of the round trip has the original's strides exactly. With a dimension of
1 there, only ``is_contiguous`` would agree: the stride of that dimension changes, and
``view(dtype)`` reads it (a campaign found ``F.silu`` of a one-channel channels-last tensor
then ``view(torch.bfloat16)`` raising only after the rewrite). The rewrite tests all that
where it runs, ``(torch.sin(input=x.mT).mT if x.dim() >= 2 and min(x.shape[-2:]) > 1 and
x.is_contiguous() else torch.sin(input=x))`` (static under Dynamo), so other ranks, shapes
and layouts keep the original computation; the
keyword spelling keeps the output from matching again. ``FUNCTIONS`` lists the ops checked
bit for bit in every floating dtype (tests/test_equivalences.py); some are not exact
(``F.gelu``'s strided kernel rounds differently, ``F.logsigmoid`` returns a fixed layout)
and are absent on purpose.
"""

from __future__ import annotations

import ast

from .. import Kind, KindContext, Proposal
from ..spelling import repeatable

FUNCTIONS = frozenset({
    "torch.abs", "torch.neg", "torch.sin", "torch.cos", "torch.tan", "torch.tanh",
    "torch.sigmoid", "torch.exp", "torch.expm1", "torch.log", "torch.log1p", "torch.sqrt",
    "torch.rsqrt", "torch.reciprocal", "torch.erf", "torch.floor", "torch.relu",
    "torch.atan", "torch.nn.functional.silu", "torch.nn.functional.softplus",
    "torch.nn.functional.elu", "torch.nn.functional.mish",
    "torch.nn.functional.hardswish",
})


class TransposeRoundTrip(Kind):
    name = "transpose_round_trip"
    node_types = (ast.Call,)

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        qualname = context.facts.imports.resolve(node.func)
        if (qualname is None or qualname not in FUNCTIONS or len(node.args) != 1
                or node.keywords):
            return None
        x = node.args[0]
        if not repeatable(x, context) or not context.is_tensor(x):
            return None
        template = ("($f(input=$x.mT).mT if $x.dim() >= 2 and min($x.shape[-2:]) > 1 "
                    "and $x.is_contiguous() else $f(input=$x))")
        return Proposal(template, {"f": node.func, "x": x})
