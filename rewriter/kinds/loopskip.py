"""A data-dependent ``if`` guarding ``continue`` in a loop that only updates tensors.

    for chunk in x.split(2):                 for chunk in x.split(2):
        s = chunk.sum()                          s = chunk.sum()
        if s < 0:                       ->       total = _eqrw_skip(s < 0, total, lambda: total + s)
            continue
        total = total + s

Skipping the rest of an iteration is the same as keeping the old value of every name the
rest assigns, which is what ``_eqrw_skip(c, old, lambda: new)`` computes: eagerly ``old if
c else new()`` (the update is evaluated only when the original would have run it, so
exceptions and cost are the original's); traced, ``torch.where(c, old, new())`` when ``c``
is a one-element tensor and ``new()`` matches ``old`` in shape, dtype and device. The loop
is rebuilt whole (one edit), and only when that is provably equivalent:

- the statements before the ``if`` are plain assignments to names (they run either way);
- the ``if`` has no ``else`` and its body is ``continue`` alone; its condition is a pure
  tensor condition that reads none of the names assigned after it (it is evaluated once per
  assignment);
- everything after it is plain assignments ``name = value`` of pure, tensor-valued
  expressions, to names bound before the loop, whose gradient through the branch not
  taken cannot turn into NaN (no division by a tensor, no fractional power); none of
  those names is changed in place anywhere in the function (torch.where makes a copy);
- the loop has no ``else``.

Anything else (side effects, ``break``, nested loops or ``if``s, Python state, a ``while``
loop) keeps its break, with a note saying which condition failed.
"""

from __future__ import annotations

import ast

from . import Kind, KindContext, Proposal, tensor_condition, with_compare
from .select import WHERE_SAFE_CALLS, _aliases_mutated, _bound_before

# Calls allowed in an update evaluated on the branch not taken: the select's torch.where
# calls plus reductions, whose backward spreads the (zero) incoming gradient unchanged.
_UPDATE_CALLS = WHERE_SAFE_CALLS | frozenset(
    "sum mean amax amin max min prod square sigmoid tanh mul add sub".split())

HELPERS = {
    "_eqrw_skip": ('''
def _eqrw_skip(condition, current, update):
    """``current if condition else update()``: the value a name keeps when ``if condition:
    continue`` skips its assignment. Traced, torch.where(condition, current, update()) when
    the condition is a one-element tensor and both values match in shape, dtype, device."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and condition.numel() == 1 and isinstance(current, _eqrw_torch.Tensor)):
        new = update()
        if (isinstance(new, _eqrw_torch.Tensor) and new.shape == current.shape
                and new.dtype == current.dtype and new.device == current.device):
            return _eqrw_torch.where(condition.reshape(()) != 0, current, new)
        return current if condition else new
    return current if condition else update()
''', ("_eqrw_compiling",)),
}


class SkipContinue(Kind):
    """``for ...: [assignments] if c: continue [assignments]`` -> one ``_eqrw_skip`` each."""

    name = "skip_continue"
    node_types = (ast.For,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"continue"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        at = _continue_guard(node.body)
        if at is None:
            return None
        guard = node.body[at]
        condition = tensor_condition(guard.test, context)
        if condition is None:
            return None  # not a tensor condition: no graph break here to fix
        reason = _refusal(node, at, context)
        if reason is not None:
            context.note(f"data-dependent `continue` left as it is: {reason}")
            return None
        return with_compare(_proposal(node, at, condition))

    def decline_reason(self, node: ast.AST, context: KindContext) -> str | None:
        """Why the audit's finding at this loop is not rewritten."""
        at = _continue_guard(node.body) if isinstance(node, ast.For) else None
        if at is None or tensor_condition(node.body[at].test, context) is None:
            return None
        return _refusal(node, at, context)


def _continue_guard(body: list[ast.stmt]) -> int | None:
    """Index of the loop body's one ``if <test>: continue`` statement (no else), or None."""
    found = [i for i, s in enumerate(body) if isinstance(s, ast.If) and not s.orelse
             and len(s.body) == 1 and isinstance(s.body[0], ast.Continue)]
    return found[0] if len(found) == 1 else None


def _plain_assign(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name))


def _refusal(loop: ast.For, at: int, context: KindContext) -> str | None:
    """Why rebuilding ``loop`` with ``_eqrw_skip`` would not be provably equivalent."""
    before, after = loop.body[:at], loop.body[at + 1:]
    if loop.orelse:
        return "the loop has an `else` block"
    if not after:
        return "nothing follows the `continue`"
    if not all(_plain_assign(s) for s in before + after):
        return ("the loop body holds more than assignments to names (side effects, "
                "`break`, nested loops or `if`s, attribute or item assignments)")
    updated = {s.targets[0].id for s in after}
    test = loop.body[at].test
    if not context.is_pure(test) or updated & _names(test):
        return "the condition has side effects or reads a name assigned after the `continue`"
    loop_names = _names(loop.target) | {s.targets[0].id for s in before}
    for statement in after:
        name, value = statement.targets[0].id, statement.value
        if name in loop_names or not _bound_before(context, name, loop):
            return f"`{name}` is not a value carried from before the loop"
        if not (context.is_tensor(value) and context.is_pure(value)):
            return f"the value assigned to `{name}` is not proven a pure tensor expression"
        if not _update_safe(value, context):
            return (f"the update of `{name}` may have a NaN gradient where it is skipped "
                    "(division by a tensor, a fractional power, or an unlisted call)")
    carried = [ast.Name(id=n, ctx=ast.Load()) for n in sorted(updated)]
    if _aliases_mutated(context, carried):
        return "a carried name is changed in place (torch.where would copy it)"
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _update_safe(value: ast.expr, context: KindContext) -> bool:
    """No operation whose gradient, evaluated where the update is skipped, can be NaN."""
    for part in ast.walk(value):
        if isinstance(part, ast.BinOp):
            if isinstance(part.op, ast.MatMult):
                return False
            if isinstance(part.op, ast.Div | ast.Mod | ast.FloorDiv) and context.kind(
                    part.right) != "number":
                return False
            if isinstance(part.op, ast.Pow) and not (
                    isinstance(part.right, ast.Constant) and isinstance(part.right.value, int)
                    and part.right.value >= 0):
                return False
        if isinstance(part, ast.Call):
            func = part.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _UPDATE_CALLS:
                return False
        if isinstance(part, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield):
            return False
    return True


def _proposal(loop: ast.For, at: int, condition: tuple[str, dict]) -> Proposal:
    test, bindings = condition[0], dict(condition[1])
    bindings.update({"target": loop.target, "iterable": loop.iter})
    lines = ["for $target in $iterable:"]
    for index, statement in enumerate(loop.body[:at]):
        bindings[f"p{index}"] = statement.value
        lines.append(f"    {statement.targets[0].id} = $p{index}")
    for index, statement in enumerate(loop.body[at + 1:]):
        name = statement.targets[0].id
        bindings[f"v{index}"] = statement.value
        lines.append(f"    {name} = _eqrw_skip({test}, {name}, lambda: $v{index})")
    return Proposal("\n".join(lines), bindings, "compound", frozenset({"_eqrw_skip"}))
