"""``x[i] = v`` with basic indexing → ``x[i].fill_(v)`` (a number) or ``x[i].copy_(v)``.

For slices, integers, ``None`` and ``...``, ``Tensor.__setitem__`` writes through the view
``x[i]``: exactly what ``fill_`` does with a Python number, and what ``copy_`` does with a
tensor (broadcast and cast alike), except that setitem first drops leading size-1
dimensions of the value, so ``x[0] = v[None]`` works where ``copy_`` raises (option
``value: tensor`` is for ``unsafe`` rules). The compiler sees an explicit view-and-copy
instead of an index_put-style assignment (slice assignment → ``copy_`` made real aliasing
miscompilations disappear). Advanced indexing (tensors, lists, bool masks) is left alone:
there ``x[idx]`` is a copy and writing into it would be lost.
"""

from __future__ import annotations

import ast

from ..inference import NUMBER
from . import Kind, KindContext, Proposal


class SetitemCopy(Kind):
    name = "setitem_copy"
    node_types = (ast.Assign,)
    options_schema = {"value": ("number", "tensor")}

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return None
        target = node.targets[0]
        if not context.is_tensor(target.value) or not _basic(target.slice, context):
            return None
        value = node.value
        if self.options["value"] == "tensor" and context.is_tensor(value):
            method = "copy_"
        elif self.options["value"] == "number" and context.kind(value) == NUMBER:
            method = "fill_"
        else:
            return None
        bindings = {"x": target.value, "v": value}
        pieces = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        index = []
        for number, piece in enumerate(pieces):
            bindings[f"i{number}"] = piece
            index.append(f"$i{number}")
        subscript = ", ".join(index) + ("," if len(index) == 1 and isinstance(
            target.slice, ast.Tuple) else "")
        return Proposal(f"$x[{subscript}].{method}($v)", bindings, "statement")


def _basic(index: ast.expr, context: KindContext) -> bool:
    """Only slices, int literals or proven Python numbers, None and Ellipsis."""
    pieces = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(_basic_piece(piece, context) for piece in pieces)


def _basic_piece(piece: ast.expr, context: KindContext) -> bool:
    if isinstance(piece, ast.Slice):
        return all(part is None or context.kind(part) == NUMBER
                   for part in (piece.lower, piece.upper, piece.step))
    if isinstance(piece, ast.Constant):
        return piece.value is None or piece.value is Ellipsis or type(piece.value) is int
    if isinstance(piece, ast.UnaryOp) and isinstance(piece.op, ast.USub):
        return isinstance(piece.operand, ast.Constant) and type(piece.operand.value) is int
    return False
