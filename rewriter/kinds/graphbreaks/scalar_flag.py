"""``.item()`` / ``.tolist()`` of a one-element tensor feeding control flow, kept a tensor.

``t.tolist()`` of a 0-d tensor is the same Python number (or bool) as ``t.item()``, and
leaves the graph the same way. Two shapes are handled:

- directly in a condition (``if t.sum().tolist() > 0:``): the select and guard kinds read
  it like ``t.item()`` (``_eqrw_compare``, see ``kinds/conditions.py``) when ``t``
  is provably 0-d (``zero_dim``): a reduction over every element, or arithmetic of such
  values with numbers. A ``.tolist()`` not proven 0-d may be a list: left alone, with a
  note;
- through a name (``n = mask.any().tolist()`` then ``if n:``): the assignment becomes
  ``n = _eqrw_item(t)`` (the Python value eagerly, a detached 0-d tensor when traced), but
  only when every use of ``n`` is the condition of an ``if``/ternary that a select or guard
  rule rewrites, where the condition reads ``_eqrw_truth(n, op, number)``: the original
  comparison eagerly, a 0-d bool tensor when traced and ``n`` holds one.

When a use of the name is anything else (printed, returned, ``range(n)``, a block of
statements no select expresses: Longformer's ``is_global_attn``), the assignment stays.

``t.item()`` of a tensor proven only with unannotated parameters taken as tensors is
rewritten the same way when every use is a condition the selects rewrite with their
run-time dispatch: ``_eqrw_item`` gives ``t.item()`` unless traced with a tensor ``t``, and
``_eqrw_truth`` compares a Python value exactly as the original did.
"""

from __future__ import annotations

import ast

from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal
from ..conditions import flag_value, scalar_of


class ScalarFlag(Kind):
    """``n = t.item()`` / ``n = t.tolist()`` whose every use is a rewritten condition."""

    name = "scalar_flag"
    node_types = (ast.Assign,)

    def tokens(self) -> frozenset[str]:
        return frozenset({".item()", ".tolist()"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            return None  # node_types: only assignments are offered
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            return None
        proof = context
        if scalar_of(node.value, context) is None and (assumed := context.assuming()) and (
                _item_call(node.value)):
            # Proven only with unannotated parameters taken as tensors: `_eqrw_item` checks
            # the value is a tensor when traced, `.item()` otherwise, and the conditions
            # (`_eqrw_truth`) compare either. `.tolist()` is not: it reads as `.item()`
            # only on a one-element tensor.
            proof = assumed
        tensor = scalar_of(node.value, proof)
        if tensor is None:
            self._diagnose(node, context)
            return None
        if flag_value(target, proof) is not node.value:
            return None
        uses = [n for n in context.walk() if isinstance(n, ast.Name)
                and n.id == target.id and isinstance(n.ctx, ast.Load)]
        if not uses or not all(_rewritten_condition(use, context) for use in uses):
            return None
        return Proposal(f"{target.id} = _eqrw_item($t)", {"t": tensor}, Level.STATEMENT,
                        frozenset({"_eqrw_item"}))

    @staticmethod
    def _diagnose(node: ast.Assign, context: KindContext) -> None:
        value = node.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr == "tolist" and not value.args
                and context.is_tensor(value.func.value)):
            context.note("`.tolist()` of a tensor not proven 0-d (a reduction over every "
                         "element): it may return a list, so it is not read as a number")


def _item_call(value: ast.expr) -> bool:
    """``value`` is ``<something>.item()``."""
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "item" and not value.args and not value.keywords)


def _rewritten_condition(use: ast.Name, context: KindContext) -> bool:
    """``use`` is (or is compared with a number in) the test of an ``if`` or a ternary that
    a select or guard rule rewrites into a tensor condition."""
    parent = context.parents.get(use)
    test: ast.expr = use
    if isinstance(parent, ast.Compare) and parent.left is use and len(parent.ops) == 1:
        test, parent = parent, context.parents.get(parent)
    if not isinstance(parent, ast.If | ast.IfExp) or parent.test is not test:
        return False
    from .. import registry  # by name: the select kind imports this module

    Select, Guard = registry()["select"], registry()["guard"]

    forms = (["ternary"] if isinstance(parent, ast.IfExp)
             else ["assign", "return", "elseless", "same_call"])
    kinds: list[Kind] = [Select({"form": f}) for f in forms]
    if isinstance(parent, ast.If):
        kinds.append(Guard({"form": "raise"}))
    quiet = KindContext(context.guards, context.assumed)  # trial proposals: no notes
    return any(kind.propose(parent, quiet) is not None for kind in kinds)
