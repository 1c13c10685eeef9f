"""``.item()`` / ``.tolist()`` of a one-element tensor feeding control flow, kept a tensor.

``t.tolist()`` of a 0-d tensor is the same Python number (or bool) as ``t.item()``, and
leaves the graph the same way. Two shapes are handled:

- directly in a condition (``if t.sum().tolist() > 0:``): the select and guard kinds read
  it like ``t.item()`` (``_eqrw_compare``, see ``kinds/__init__.py``) when ``t`` is
  provably 0-d (``zero_dim``): a reduction over every element, or arithmetic of such
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

from ...analysis.inference import NUMBER, TENSOR
from ...syntax.enums import Level
from .. import Kind, KindContext, Proposal

# Reductions over every element when called without arguments: their result is 0-d.
_FULL_REDUCTIONS = frozenset("""
    sum mean max min amax amin any all prod norm std var median nansum nanmean
    count_nonzero logsumexp
""".split())
# logsumexp needs a dim argument; without one it fails, so it is never proven 0-d below.
_ZERO_DIM_REDUCTIONS = _FULL_REDUCTIONS - {"logsumexp"}
# Methods that keep a 0-d tensor 0-d when called without arguments.
_SHAPE_KEEPING = frozenset("""
    abs neg float double half bfloat16 int long bool detach clone sqrt exp log sigmoid tanh
    relu logical_not
""".split())
_SOURCES = ("item", "tolist")

# The helper its rewrites call, beside the kind (found by kinds.discover).
HELPERS = {
    "_eqrw_truth": ('''
def _eqrw_truth(value, operator, number):
    """``value <operator> number`` (``bool(value)`` for "truth"), ``value`` a name that
    holds ``t.item()`` eagerly; traced it may hold ``t`` as a 0-d tensor (``_eqrw_item``),
    then compared as ``_eqrw_compare`` compares (a 0-d bool tensor when exact)."""
    import operator as _operator

    if isinstance(value, _eqrw_torch.Tensor):
        return _eqrw_compare(value, operator, number)
    compare = {"<": _operator.lt, "<=": _operator.le, ">": _operator.gt,
               ">=": _operator.ge, "==": _operator.eq, "!=": _operator.ne}.get(operator)
    return bool(value) if compare is None else compare(value, number)
''', ("_eqrw_compare",)),
}


def zero_dim(node: ast.expr, context: KindContext) -> bool:
    """Proven a 0-d tensor: a reduction over every element (``x.sum()``, ``torch.amax(x)``,
    ``mask.any()``...), a shape-keeping method of one, or a comparison or arithmetic of one
    with Python numbers."""
    if not context.is_tensor(node):
        return False
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _zero_dim_with_numbers([node.left, node.comparators[0]], context)
    if isinstance(node, ast.BinOp):
        return _zero_dim_with_numbers([node.left, node.right], context)
    if isinstance(node, ast.UnaryOp):
        return zero_dim(node.operand, context)
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    func = node.func
    qualname = context.facts.imports.resolve(func) or ""
    if qualname.startswith("torch.") and qualname.count(".") == 1:
        name = qualname.split(".")[1]
        return (name in _ZERO_DIM_REDUCTIONS and len(node.args) == 1
                and context.is_tensor(node.args[0]))
    if not isinstance(func, ast.Attribute) or node.args:
        return False
    if func.attr in _ZERO_DIM_REDUCTIONS:
        return context.is_tensor(func.value)
    return func.attr in _SHAPE_KEEPING and zero_dim(func.value, context)


def _zero_dim_with_numbers(operands: list[ast.expr], context: KindContext) -> bool:
    value_kinds = [context.value_kind(o) for o in operands]
    return all(k in (TENSOR, NUMBER) for k in value_kinds) and all(
        zero_dim(o, context) for o, k in zip(operands, value_kinds) if k == TENSOR)


def scalar_of(node: ast.expr, context: KindContext) -> ast.expr | None:
    """The tensor ``t`` when ``node`` is ``t.item()`` (t a tensor) or ``t.tolist()`` (t
    proven 0-d): a Python number taken from a one-element tensor."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SOURCES and not node.args and not node.keywords):
        return None
    tensor = node.func.value
    if node.func.attr == "item":
        return tensor if context.is_tensor(tensor) else None
    return tensor if zero_dim(tensor, context) else None


def flag_value(name: ast.Name, context: KindContext) -> ast.expr | None:
    """The value a local name is bound to once and only once in the function, when that
    value is a Python number taken from a one-element tensor (``scalar_of``) or what
    this kind turned it into (``_eqrw_item(t)``)."""
    if not context.function_mentions("item", "tolist"):  # each value named holds one
        return None
    bound = context.binders(name.id)
    if len(bound) != 1:
        return None
    assign = context.parents.get(bound[0])
    if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
            and assign.targets[0] is bound[0]):
        return None
    value = assign.value
    if scalar_of(value, context) is not None:
        return value
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "_eqrw_item" and len(value.args) == 1 and not value.keywords):
        return value
    return None


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
