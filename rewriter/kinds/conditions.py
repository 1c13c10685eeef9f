"""Tensor conditions: what the graph-break kinds prove about the test of an ``if``.

Shared by several kinds (no kind here). ``tensor_condition`` reads a data-dependent test as a
tensor (``not``/``and``/``or`` over boolean tensors as ``~``/``&``/``|``; ``t.item() < n``,
``bool(t)`` and ``t.tolist()`` of a 0-d ``t`` through ``_eqrw_compare``); ``is_boolean`` proves
a bool tensor; ``zero_dim``, ``scalar_of`` and ``flag_value`` prove a Python number taken from a
one-element tensor, directly or through a local name (the scalar_flag kind rewrites those
names). Used by the select, guard, skip_continue, fold_tests, scalar_flag, masked_reduction and
mask_scatter kinds.
"""

from __future__ import annotations

import ast

from ..analysis.inference import NUMBER, TENSOR
from ..syntax.enums import ValueKind
from ..syntax.pattern import Bindings
from . import KindContext, Proposal

BOOLEAN_METHODS = frozenset({
    "any", "all", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not",
    "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "bool",
    "isclose"})


def is_boolean(node: ast.expr, context: KindContext) -> bool:
    """Proven a bool tensor: a tensor comparison, any()/all()/isnan()..., ~, & and | of those,
    or a local name assigned once from one of them."""
    if not context.is_tensor(node):
        return False
    if isinstance(node, ast.Name):
        values = [n.value for n in context.assignments(node.id)]
        return len(values) == 1 and is_boolean(values[0], context)
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_boolean(node.operand, context)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr | ast.BitXor):
        return is_boolean(node.left, context) and is_boolean(node.right, context)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr in BOOLEAN_METHODS)


def tensor_condition(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    """Template text and bindings computing ``test``'s truth as a tensor, or None.

    A tensor is used as it is; ``not``, ``and`` and ``or`` over pure boolean tensors become
    ``~``, ``&`` and ``|`` (the truth value is the same, and evaluating a pure operand that
    Python would have skipped changes nothing). Anything else is not data-dependent here.
    Worked out once per test and inference (every select form asks about every ``if``).
    """
    derived = context.guards.inference.derived
    key = ("tensor_condition", test)
    if key not in derived:
        derived[key] = _tensor_condition(test, context)
    found = derived[key]
    assert found is None or isinstance(found, tuple)
    return None if found is None else (found[0], dict(found[1]))


def _tensor_condition(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    scalar = _scalar_condition(test, context)
    if scalar is not None:
        return scalar
    bindings: Bindings = {}
    text = _converted(test, context, bindings)
    return None if text is None else (text, bindings)


def _converted(node: ast.expr, context: KindContext, bindings: Bindings) -> str | None:
    """``node``'s truth as tensor template text, binding its tensors in ``bindings``.

    A module-level function, not a closure: a closure calling itself is a reference
    cycle, which would keep the whole file's tree alive until the garbage collector ran.
    """
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _converted(node.operand, context, bindings)
        return None if inner is None or not _boolean_or_op(node.operand, context) else (
            f"~{_grouped(inner)}")
    if isinstance(node, ast.BoolOp):
        converted = [_converted(v, context, bindings) for v in node.values]
        parts = [p for p in converted if p is not None]
        if len(parts) != len(converted) or not all(
                _boolean_or_op(v, context) and context.is_pure(v) for v in node.values):
            return None
        joiner = " & " if isinstance(node.op, ast.And) else " | "
        return joiner.join(_grouped(p) for p in parts)
    if not context.is_tensor(node):
        return None
    name = f"c{len(bindings)}"
    bindings[name] = node
    return f"${name}"


def with_compare(proposal: Proposal | None) -> Proposal | None:
    """``proposal`` with the ``_eqrw_compare`` / ``_eqrw_truth`` helpers its condition uses."""
    for helper in ("_eqrw_compare", "_eqrw_truth"):
        if proposal is not None and helper + "(" in proposal.template:
            proposal.helpers = proposal.helpers | {helper}
    return proposal


COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                ast.NotEq: "!="}


def _scalar_condition(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    """A condition that leaves the graph through a Python scalar: ``t.item()``,
    ``bool(t)`` or ``t.item() < number`` on a tensor ``t`` (``t.tolist()`` too, for a
    ``t`` proven 0-d, and a name holding one of those: ``flag_value``). It becomes
    ``_eqrw_compare(t, op, number)``: eagerly exactly the original expression (a Python
    bool); traced, the same comparison as a 0-d tensor when that is exact for ``t``'s
    dtype (see rules/helpers/shared.py), so the select or guard around it needs no ``.item()``. Only
    as the whole condition: ``not``/``and``/``or`` would need the tensor operators."""
    def item_of(node: ast.expr) -> ast.expr | None:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "item" and not node.args and not node.keywords
                and context.is_tensor(node.func.value)):
            return node.func.value
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "bool" and len(node.args) == 1 and not node.keywords
                and context.value_kind(node.func) == ValueKind.OBJECT
                and context.is_tensor(node.args[0])):
            return node.args[0]
        return None

    def flag(node: ast.expr) -> bool:  # a name holding t.item() / t.tolist() (see below)
        return isinstance(node, ast.Name) and flag_value(node, context) is not None

    if (tensor := item_of(test) or scalar_of(test, context)) is not None:
        return "_eqrw_compare($c0, 'truth', None)", {"c0": tensor}
    if flag(test):
        return "_eqrw_truth($c0, 'truth', None)", {"c0": test}
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and type(test.ops[0]) in COMPARISONS):
        return None
    left, right = test.left, test.comparators[0]
    operator = COMPARISONS[type(test.ops[0])]
    if context.value_kind(right) != ValueKind.NUMBER:
        return None
    if flag(left):
        return f"_eqrw_truth($c0, {operator!r}, $c1)", {"c0": left, "c1": right}
    tensor = scalar_of(left, context) or (item_of(left) if isinstance(left, ast.Call)
                                          and isinstance(left.func, ast.Attribute) else None)
    if tensor is not None:
        return f"_eqrw_compare($c0, {operator!r}, $c1)", {"c0": tensor, "c1": right}
    return None


def _grouped(text: str) -> str:
    """A metavariable stands alone (substitution parenthesises it); composites need parens."""
    return text if text.startswith("$") and text[1:].isidentifier() else f"({text})"


def _boolean_or_op(node: ast.expr, context: KindContext) -> bool:
    if isinstance(node, ast.BoolOp):
        return all(_boolean_or_op(v, context) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _boolean_or_op(node.operand, context)
    return is_boolean(node, context)


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
    the scalar_flag kind turned it into (``_eqrw_item(t)``)."""
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
