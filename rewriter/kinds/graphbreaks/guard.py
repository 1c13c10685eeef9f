"""Validation guards on tensor values, without a graph break.

``if <tensor condition>: raise E("message")`` becomes ``_eqrw_check``: eagerly it
raises the same exception type with the same message; when traced it is
``torch._assert_async``, which raises a RuntimeError with that message if the check
fails; under TorchScript it is the same ``raise``. ``assert <tensor condition>,
"message"`` stays an ``assert`` statement, so ``python -O`` still removes it, around
``_eqrw_assert(condition, message)``: the condition's truth eagerly, True after an
in-graph ``torch._assert_async`` when traced. Only the builtin exception types the
TorchScript path can raise by name and literal messages are rewritten.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Literal

from ...analysis.knowledge import SCRIPTED_EXCEPTIONS
from ...syntax.enums import Level
from ...syntax.pattern import Bindings
from .. import Kind, KindContext, Proposal
from ..conditions import COMPARISONS, tensor_condition, with_compare
from ..spelling import number_literal

# The exceptions _eqrw_check raises by name under TorchScript (see rules/helpers/guard.py).
_EXCEPTIONS = frozenset(SCRIPTED_EXCEPTIONS) | {"RuntimeError"}


class Guard(Kind):
    name = "guard"
    node_types = (ast.If, ast.Assert)
    options_schema = {"form": ("raise", "assert")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"raise" if self.options["form"] == "raise" else "assert"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        proposal = self._propose(node, context, tensor_condition)
        if proposal is None and (assumed := context.assuming()) is not None:
            # The helpers check isinstance(condition, Tensor) themselves, so a condition of
            # unknown kind that is a tensor when the parameters are is checked as written.
            proposal = self._propose(node, assumed, _plain_condition)
        if proposal is None:
            proposal = self._propose(node, context, _item_comparison)
        return with_compare(proposal)

    def _propose(self, node: ast.AST, context: KindContext,
                 convert: Callable[[ast.expr, KindContext], tuple[str, Bindings] | None]
                 ) -> Proposal | None:
        if self.options["form"] == "assert":
            if not isinstance(node, ast.Assert):
                return None
            condition = convert(node.test, context)
            message = _literal(node.msg)
            if condition is None:
                return None
            if message is False and node.msg is not None:  # computed: evaluated on failure
                return Proposal(f"assert _eqrw_assert({condition[0]}, "
                                f"{_traced_message(node.msg)!r}), $message",
                                {**condition[1], "message": node.msg}, Level.STATEMENT,
                                frozenset({"_eqrw_assert"}))
            text = "" if message is None else f", {message!r}"
            return Proposal(f"assert _eqrw_assert({condition[0]}, {message!r}){text}",
                            condition[1], Level.STATEMENT, frozenset({"_eqrw_assert"}))
        if not isinstance(node, ast.If) or node.orelse or len(node.body) != 1:
            return None
        raised = node.body[0]
        condition = convert(node.test, context)
        if not isinstance(raised, ast.Raise) or raised.exc is None or condition is None:
            return None
        error, message = _exception(raised.exc)
        if error is not None and raised.cause is None:
            return Proposal(f"_eqrw_check({condition[0]}, False, {error!r}, {message!r})",
                            condition[1], Level.COMPOUND, frozenset({"_eqrw_check"}))
        # Any other raise (a computed message, a library's own exception, a cause) stays as
        # written under the test, which only the traced path turns into an in-graph check.
        return Proposal(f"if _eqrw_fails({condition[0]}, {_traced_message(raised.exc)!r}):\n"
                        "    $raised", {**condition[1], "raised": raised}, Level.COMPOUND,
                        frozenset({"_eqrw_fails"}))


def _plain_condition(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    """A single tensor-valued test, kept as written (no ``~``/``&``/``|`` conversion,
    which is right for tensors only)."""
    return ("$c0", {"c0": test}) if context.is_tensor(test) else None


def _item_comparison(test: ast.expr, context: KindContext) -> tuple[str, Bindings] | None:
    """``t.item() <op> y`` (``assert lengths.max().item() <= slen``) whatever ``t`` and
    ``y`` hold: ``_eqrw_compare(t, op, y)`` computes exactly that eagerly, and compares in
    the graph only when tracing finds a tensor ``t`` and a number ``y`` it represents
    exactly. ``y`` must be a name or a number: the helper reads ``t.item()`` after ``y``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and type(test.ops[0]) in COMPARISONS):
        return None
    item, right = test.left, test.comparators[0]
    if not (isinstance(item, ast.Call) and isinstance(item.func, ast.Attribute)
            and item.func.attr == "item" and not item.args and not item.keywords
            and (isinstance(right, ast.Name) or number_literal(right) is not None)):
        return None
    operator = COMPARISONS[type(test.ops[0])]
    return f"_eqrw_compare($c0, {operator!r}, $c1)", {"c0": item.func.value, "c1": right}


def _literal(node: ast.AST | None) -> str | Literal[False] | None:
    """The string a message node always holds, None for no message, False if not literal."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return False


def _traced_message(node: ast.expr | None) -> str:
    """The message a traced check fails with where the original's is computed: a literal
    as it is, an f-string with its fields as written (``"bad {x.shape}"``: a graph cannot
    format them), any other expression as written; for ``raise E(m)``, that of ``m``."""
    if (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and not isinstance(node.args[0], ast.Starred)):
        node = node.args[0]
    if node is None:
        return "AssertionError"
    literal = _literal(node)
    if isinstance(literal, str):
        return literal
    if isinstance(node, ast.JoinedStr):
        return "".join(str(part.value) if isinstance(part, ast.Constant) else
                       "{" + ast.unparse(part.value) + "}"  # type: ignore[attr-defined]
                       for part in node.values)
    return ast.unparse(node)


def _exception(node: ast.AST | None) -> tuple[str | None, str | None]:
    """``(builtin exception name, literal message or None)`` for ``raise E`` / ``E("...")``."""
    if isinstance(node, ast.Name) and node.id in _EXCEPTIONS:
        return node.id, None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _EXCEPTIONS and not node.keywords and len(node.args) <= 1):
        message = _literal(node.args[0]) if node.args else None
        if message is not False:
            return node.func.id, message
    return None, None
