"""Validation guards on tensor values, without a graph break.

``if <tensor condition>: raise E("message")`` and ``assert <tensor condition>,
"message"`` become ``_eqrw_check``: eagerly it raises the same exception type
with the same message; when traced it is ``torch._assert_async``, which raises a
RuntimeError with that message if the check fails. Only builtin exception types
and literal messages are rewritten: anything else is left alone.
"""

from __future__ import annotations

import ast
import builtins

from . import Kind, KindContext, Proposal, tensor_condition

_EXCEPTIONS = frozenset(name for name in dir(builtins)
                        if isinstance(getattr(builtins, name), type)
                        and issubclass(getattr(builtins, name), Exception))


class Guard(Kind):
    name = "guard"
    node_types = (ast.If, ast.Assert)
    options_schema = {"form": ("raise", "assert")}

    def tokens(self) -> frozenset[str]:
        return frozenset({"raise" if self.options["form"] == "raise" else "assert"})

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        if self.options["form"] == "assert":
            if not isinstance(node, ast.Assert):
                return None
            condition = tensor_condition(node.test, context)
            message = _literal(node.msg)
            if condition is None or message is False:
                return None
            return Proposal(f"_eqrw_check({condition[0]}, True, AssertionError, {message!r})",
                            condition[1], "statement", frozenset({"_eqrw_check"}))
        if not isinstance(node, ast.If) or node.orelse or len(node.body) != 1:
            return None
        raised = node.body[0]
        condition = tensor_condition(node.test, context)
        if not isinstance(raised, ast.Raise) or raised.cause is not None or condition is None:
            return None
        error, message = _exception(raised.exc)
        if error is None:
            return None
        return Proposal(f"_eqrw_check({condition[0]}, False, {error}, {message!r})",
                        condition[1], "compound", frozenset({"_eqrw_check"}))


def _literal(node: ast.AST | None) -> str | None | bool:
    """The string a message node always holds, None for no message, False if not literal."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return False


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
