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

from ...syntax.enums import Level, ValueKind
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..conditions import tensor_condition, with_compare
from ..values import WHERE_SAFE_CALLS, aliases_mutated, bound_before

# Calls allowed in an update evaluated on the branch not taken: the select's torch.where
# calls plus reductions, whose backward spreads the (zero) incoming gradient unchanged.
_UPDATE_CALLS = WHERE_SAFE_CALLS | frozenset(
    "sum mean amax amin max min prod square sigmoid tanh mul add sub".split())


class SkipContinue(Kind):
    """``for ...: [assignments] if c: continue [assignments]`` -> one ``_eqrw_skip`` each."""

    name = "skip_continue"
    node_types = (ast.For,)

    def tokens(self) -> frozenset[str]:
        return frozenset({"continue"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if not isinstance(node, ast.For):  # node_types: only for loops are offered
            return None
        found = _continue_guard(node.body)
        if found is None:
            return None
        at, guard = found
        condition = tensor_condition(guard.test, context)
        if condition is None:
            return None  # not a tensor condition: no graph break here to fix
        reason = _refusal(node, at, guard.test, context)
        if reason is not None:
            context.note(f"data-dependent `continue` left as it is: {reason}")
            return None
        before = _plain_assignments(node.body[:at])
        after = _plain_assignments(node.body[at + 1:])
        if before is None or after is None:
            return None  # _refusal returned a reason for this already
        return with_compare(_proposal(node, condition, before, after))

    def decline_reason(self, node: ast.AST, context: KindContext) -> str | None:
        """Why the audit's finding at this loop is not rewritten."""
        if not isinstance(node, ast.For):
            return None
        found = _continue_guard(node.body)
        if found is None or tensor_condition(found[1].test, context) is None:
            return None
        return _refusal(node, found[0], found[1].test, context)


def _continue_guard(body: list[ast.stmt]) -> tuple[int, ast.If] | None:
    """Index of the loop body's one ``if <test>: continue`` statement (no else), and that
    statement, or None."""
    found = [(i, s) for i, s in enumerate(body) if isinstance(s, ast.If) and not s.orelse
             and len(s.body) == 1 and isinstance(s.body[0], ast.Continue)]
    return found[0] if len(found) == 1 else None


def _plain_assignments(statements: list[ast.stmt]) -> list[tuple[str, ast.expr]] | None:
    """``(name, value)`` of each statement ``name = value``, or None when one is anything
    else (several targets, an attribute or item target, any other statement)."""
    pairs: list[tuple[str, ast.expr]] = []
    for statement in statements:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return None
        target = statement.targets[0]
        if not isinstance(target, ast.Name):
            return None
        pairs.append((target.id, statement.value))
    return pairs


def _refusal(loop: ast.For, at: int, test: ast.expr, context: KindContext) -> str | None:
    """Why rebuilding ``loop`` (whose statement ``at`` is ``if test: continue``) with
    ``_eqrw_skip`` would not be provably equivalent."""
    if loop.orelse:
        return "the loop has an `else` block"
    if at + 1 == len(loop.body):
        return "nothing follows the `continue`"
    before = _plain_assignments(loop.body[:at])
    after = _plain_assignments(loop.body[at + 1:])
    if before is None or after is None:
        return ("the loop body holds more than assignments to names (side effects, "
                "`break`, nested loops or `if`s, attribute or item assignments)")
    updated = {name for name, _ in after}
    if not context.is_pure(test) or updated & _names(test):
        return "the condition has side effects or reads a name assigned after the `continue`"
    loop_names = _names(loop.target) | {name for name, _ in before}
    for name, value in after:
        if name in loop_names or not bound_before(context, name, loop):
            return f"`{name}` is not a value carried from before the loop"
        if not (context.is_tensor(value) and context.is_pure(value)):
            return f"the value assigned to `{name}` is not proven a pure tensor expression"
        if not _update_safe(value, context):
            return (f"the update of `{name}` may have a NaN gradient where it is skipped "
                    "(division by a tensor, a fractional power, or an unlisted call)")
    carried: list[ast.expr] = [ast.Name(id=n, ctx=ast.Load()) for n in sorted(updated)]
    if aliases_mutated(context, carried):
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
            if isinstance(part.op, ast.Div | ast.Mod | ast.FloorDiv) and context.value_kind(
                    part.right) != ValueKind.NUMBER:
                return False
            if isinstance(part.op, ast.Pow) and not (
                    isinstance(part.right, ast.Constant) and isinstance(part.right.value, int)
                    and part.right.value >= 0):
                return False
        if isinstance(part, ast.Call):
            func = part.func
            name = (func.attr if isinstance(func, ast.Attribute)
                    else func.id if isinstance(func, ast.Name) else "")
            if name not in _UPDATE_CALLS:
                return False
        if isinstance(part, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield):
            return False
    return True


def _proposal(loop: ast.For, condition: tuple[str, Bindings],
              before: list[tuple[str, ast.expr]],
              after: list[tuple[str, ast.expr]]) -> Proposal:
    test, bindings = condition[0], dict(condition[1])
    bindings.update({"target": loop.target, "iterable": loop.iter})
    lines = ["for $target in $iterable:"]
    for index, (name, value) in enumerate(before):
        bindings[f"p{index}"] = value
        lines.append(f"    {name} = $p{index}")
    for index, (name, value) in enumerate(after):
        bindings[f"v{index}"] = value
        lines.append(f"    {name} = _eqrw_skip({test}, {name}, lambda: $v{index})")
    return Proposal("\n".join(lines), bindings, Level.COMPOUND, frozenset({"_eqrw_skip"}))
