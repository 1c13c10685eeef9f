"""Guards (the ``guard`` kind): ``raise`` and ``assert`` on a tensor condition
checked inside the graph.

The ``# {SCRIPTED_RAISES}`` line of ``_eqrw_check`` is replaced, when the rewriter reads this
file, by one ``if error == 'E': raise E(text)`` per exception of
``analysis.knowledge.SCRIPTED_EXCEPTIONS``: TorchScript cannot raise an exception named by a
string, so each is spelled out.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls
# The `type: ignore` comments (dropped from the text inserted): torch.jit's stubs do not
# export `is_scripting` [attr-defined]; a condition annotated as a tensor (for
# TorchScript) is still tested with isinstance: eager callers pass anything
# [redundant-expr].

from .shared import _eqrw_compiling, _eqrw_torch, _eqrw_typing

__all__ = ["_eqrw_check", "_eqrw_fails", "_eqrw_assert"]


def _eqrw_check(condition: _eqrw_torch.Tensor, expected: bool, error: str,
                message: _eqrw_typing.Optional[str]) -> None:
    """Raise the builtin exception ``error(message)`` unless ``bool(condition) == expected``.
    Traced, ``torch._assert_async`` (a RuntimeError with the same message) instead of a graph
    break; under TorchScript, the same ``raise`` TorchScript gives the original code."""
    if _eqrw_torch.jit.is_scripting():  # type: ignore[attr-defined]
        if bool(condition) != expected:
            text = "" if message is None else message
            # {SCRIPTED_RAISES}
            raise RuntimeError(text)
    elif (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)  # type: ignore[redundant-expr]
          and condition.numel() == 1):
        holds = condition.reshape(()) != 0
        _eqrw_torch._assert_async(holds if expected else ~holds,
                                  error if message is None else message)
    elif bool(condition) != expected:
        _eqrw_raise(error, message)


@_eqrw_torch.jit.unused
def _eqrw_raise(error: str, message: _eqrw_typing.Optional[str]) -> None:
    import builtins

    raise getattr(builtins, error)() if message is None else getattr(builtins, error)(message)


def _eqrw_fails(condition: _eqrw_torch.Tensor, message: str) -> bool:
    """``bool(condition)`` for ``if condition: raise ...`` kept as written. Traced,
    ``torch._assert_async`` checks it inside the graph (a RuntimeError with ``message``)
    and this is False, so the raise is not traced."""
    if (not _eqrw_torch.jit.is_scripting() and _eqrw_compiling()  # type: ignore[attr-defined]
            and isinstance(condition, _eqrw_torch.Tensor) and condition.numel() == 1):  # type: ignore[redundant-expr]
        _eqrw_torch._assert_async(condition.reshape(()) == 0, message)
        return False
    return bool(condition)


def _eqrw_assert(condition: _eqrw_torch.Tensor, message: _eqrw_typing.Optional[str]) -> bool:
    """``bool(condition)`` for an ``assert`` statement (which ``python -O`` removes, call
    included). Traced, ``torch._assert_async`` checks it inside the graph and this is True."""
    if (not _eqrw_torch.jit.is_scripting() and _eqrw_compiling()  # type: ignore[attr-defined]
            and isinstance(condition, _eqrw_torch.Tensor) and condition.numel() == 1):  # type: ignore[redundant-expr]
        _eqrw_torch._assert_async(condition.reshape(()) != 0,
                                  "AssertionError" if message is None else message)
        return True
    return bool(condition)
