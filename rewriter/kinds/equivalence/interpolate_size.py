"""``F.interpolate(x, scale_factor=s, ...)`` → ``F.interpolate(x, size=[...], ...)``.

With ``scale_factor`` the kernels map output to input coordinates with ``1 / s``; with
``size`` they use ``in / out``. For an integer ``s`` the output size is exactly ``in * s``,
both ratios are the same correctly rounded number, and every mode gives bit-identical
results, while the compiler sees a different graph (this rewrite made real interpolation
miscompilations disappear). For a non-integer ``s``, ``floor(in * s)`` is the output size but
``in / out`` is not ``1 / s``, so sampled positions can move: option ``scales: any`` allows
those too, for ``unsafe`` rules only. The call keeps its spelling and other arguments; it is
left alone when it passes ``size``, ``recompute_scale_factor`` or positional arguments after
the input, or when the input is not a plain tensor name (it is read twice). Where the
original raises (an input of rank < 3) the rewrite raises another exception type
(ValueError instead of NotImplementedError), so it is not applied inside a ``try`` body.
"""

from __future__ import annotations

import ast

from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..spelling import inside_try, number_literal, repeatable

_NAMES = frozenset({"torch.nn.functional.interpolate", "torch.nn.functional.upsample"})


class InterpolateSize(Kind):
    name = "interpolate_size"
    node_types = (ast.Call,)
    options_schema = {"scales": ("integer", "any")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"scale_factor"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Call):  # node_types: only calls are offered
            return None
        qualname = context.facts.imports.resolve(node.func)
        if qualname is None or qualname not in _NAMES or len(node.args) != 1:
            return None
        keywords = {k.arg: k for k in node.keywords}
        if None in keywords or "size" in keywords or "recompute_scale_factor" in keywords:
            return None
        scale = keywords.get("scale_factor")
        x = node.args[0]
        if (scale is None or not repeatable(x, context) or not context.is_tensor(x)
                or inside_try(node, context)):
            return None
        value = number_literal(scale.value)
        if value is None or value <= 0:
            return None
        if self.options["scales"] == "integer" and value != int(value):
            return None
        if self.options["scales"] == "any" and value == int(value):
            return None  # the safe rule handles it
        factor = int(value) if value == int(value) else value
        # floor(in * s) as torch computes it (int() truncates, and sizes are positive)
        size = (f"[d * {factor} for d in $x.shape[2:]]" if isinstance(factor, int)
                else f"[int(d * {factor!r}) for d in $x.shape[2:]]")
        rest = [k for k in node.keywords if k.arg != "scale_factor"]
        bindings: Bindings = {"f": node.func, "x": x}
        parts = ["$x", f"size={size}"]
        for index, keyword in enumerate(rest):
            bindings[f"k{index}"] = keyword.value
            parts.append(f"{keyword.arg}=$k{index}")
        return Proposal(f"$f({', '.join(parts)})", bindings)
