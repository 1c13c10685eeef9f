"""``x[i] = v`` with basic indexing → ``x[i].copy_(...)``: an explicit view and copy.

For slices, integers, ``None`` and ``...``, ``Tensor.__setitem__`` writes through the view
``x[i]`` with ``copy_``. A Python number is first made a tensor of x's dtype, so
``x[i] = 2.5`` is ``x[i].copy_(torch.tensor(2.5, dtype=x.dtype))``: the same conversion
(and the same overflow error), and like setitem it refuses to write into overlapping memory
(``fill_`` would not). A tensor value is broadcast and cast alike, except that setitem first
drops leading size-1 dimensions of the value, so ``x[0] = v[None]`` works where ``copy_``
raises (option ``value: tensor`` is for ``unsafe`` rules). The compiler sees an explicit
view-and-copy instead of an index_put-style assignment (slice assignment → ``copy_`` made
real aliasing miscompilations disappear). Advanced indexing (tensors, lists, bool masks) is
left alone: there ``x[idx]`` is a copy and writing into it would be lost.
"""

from __future__ import annotations

import ast

from ...analysis.inference import NUMBER
from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..spelling import repeatable, torch_spelled


class SetitemCopy(Kind):
    name = "setitem_copy"
    node_types = (ast.Assign,)
    options_schema = {"value": ("number", "tensor")}

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.Assign):  # node_types: only assignments are offered
            return None
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return None
        target = node.targets[0]
        if not context.is_tensor(target.value) or not _basic(target.slice, context):
            return None
        value = node.value
        if self.options["value"] == "tensor" and context.is_tensor(value):
            source = "$v"
        elif (self.options["value"] == "number" and context.value_kind(value) == NUMBER
              and repeatable(target.value, context) and torch_spelled(context)):
            source = "torch.tensor($v, dtype=$x.dtype)"
        else:
            return None
        # The index is written out as source text: libcst cannot address a slice on its own.
        return Proposal(f"$x[{_index_text(target.slice)}].copy_({source})",
                        {"x": target.value, "v": value}, Level.STATEMENT)


def _index_text(index: ast.expr) -> str:
    if not isinstance(index, ast.Tuple):
        return ast.unparse(index)
    pieces = [ast.unparse(piece) for piece in index.elts]
    return ", ".join(pieces) + ("," if len(pieces) == 1 else "")


def _basic(index: ast.expr, context: KindContext) -> bool:
    """Only slices, int literals or proven Python numbers, None and Ellipsis."""
    pieces = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(_basic_piece(piece, context) for piece in pieces)


def _basic_piece(piece: ast.expr, context: KindContext) -> bool:
    if isinstance(piece, ast.Slice):
        return all(part is None or context.value_kind(part) == NUMBER
                   for part in (piece.lower, piece.upper, piece.step))
    if isinstance(piece, ast.Constant):
        return piece.value is None or piece.value is Ellipsis or type(piece.value) is int
    if isinstance(piece, ast.UnaryOp) and isinstance(piece.op, ast.USub):
        return isinstance(piece.operand, ast.Constant) and type(piece.operand.value) is int
    return False
