"""What the graph-break kinds prove about the values a rewrite moves, keeps or copies.

Shared by several kinds (no kind here): the calls ``torch.where`` may evaluate on the branch
it does not take and the names changed in place, which ``torch.where`` would copy (the select
and skip_continue kinds); whether a name holds a value before a statement (the value those
keep); the conversions that return their receiver when nothing needs converting (the
attribute_refresh and select kinds); the tensors a Python number meets in arithmetic (the
item_scalar and masked_reduction kinds).
"""

from __future__ import annotations

import ast

from ..analysis.inference import TENSOR
from . import KindContext

# Calls allowed in a torch.where branch: elementwise or shape-only, total functions
# whose gradient cannot turn into NaN through the untaken branch.
WHERE_SAFE_CALLS = frozenset("""
    zeros_like ones_like full_like clone detach clamp clamp_min clamp_max clip abs neg relu
    maximum minimum float double half bfloat16 to type_as reshape view view_as expand
    expand_as unsqueeze squeeze flatten contiguous transpose permute masked_fill
""".split())
_MUTATING_SUFFIX = "_"  # in-place tensor methods: add_, copy_, masked_fill_...


def bound_before(context: KindContext, name: str, node: ast.stmt) -> bool:
    """``name`` holds a value before ``node``: a parameter of the enclosing function, or
    assigned on an earlier line (the old value a select or a skipped update keeps)."""
    function = context.function
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and name in {
            a.arg for a in function.args.args + function.args.kwonlyargs}:
        return True
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               and n.lineno < node.lineno for n in context.walk())


def aliases_mutated(context: KindContext, branches: list[ast.expr]) -> bool:
    """A branch that is a bare name aliases it; torch.where would make a copy, so any
    in-place change of such a name in the function would behave differently."""
    aliased = {b.id for b in branches if isinstance(b, ast.Name)}
    aliased |= {b.attr for b in branches if isinstance(b, ast.Attribute)}
    if not aliased:
        return False
    for node in context.walk():
        target = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr.endswith(_MUTATING_SUFFIX)
                and not node.func.attr.startswith("_")):
            target = node.func.value
        elif isinstance(node, ast.AugAssign):
            target = node.target
        elif isinstance(node, ast.Assign):
            subscripts = [t.value for t in node.targets if isinstance(t, ast.Subscript)]
            target = subscripts[0] if subscripts else None
        if isinstance(target, ast.Name) and target.id in aliased:
            return True
        if isinstance(target, ast.Attribute) and target.attr in aliased:
            return True
    return False


# Conversions that return the tensor (or module) itself when nothing needs converting.
CONVERSIONS = frozenset({"to", "type", "cpu", "cuda", "contiguous", "float", "double",
                          "half", "bfloat16", "long", "int", "bool"})


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def feeds_tensor_arithmetic(node: ast.AST, context: KindContext) -> bool:
    """The value meets a tensor in + - * / before anything else sees it: directly, after
    arithmetic with Python numbers, or through a local name assigned once."""
    return bool(tensor_partners(node, context))


def tensor_partners(node: ast.AST, context: KindContext, depth: int = 0) -> list[ast.expr]:
    """The tensors the value of ``node`` meets in + - * / (see ``feeds_tensor_arithmetic``),
    or nothing when any of its uses meets something else first."""
    if depth > 8:
        return []
    parent = context.parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC):
        other = parent.right if parent.left is node else parent.left
        if context.value_kind(other) == TENSOR:
            return [other]
        if context.value_kind(other) == "number":
            return tensor_partners(parent, context, depth + 1)
        return []
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
            parent.targets[0], ast.Name):
        name = parent.targets[0].id
        uses = [n for n in context.walk() if isinstance(n, ast.Name)
                and n.id == name]
        loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
        if len(uses) - len(loads) != 1:
            return []
        partners = [tensor_partners(use, context, depth + 1) for use in loads]
        return [p for found in partners for p in found] if all(partners) else []
    return []
