"""Helpers that several kinds' rewrites call, and the preamble of every helper block.

Its two imports are the preamble the rewriter inserts before the helpers of a rewritten module
(``helpers.PREAMBLE`` is read from here), and the other helper files take ``_eqrw_torch`` and
``_eqrw_typing`` from here, so that each file is checked against exactly what a rewritten
module has. ``_eqrw_compiling`` is the test every helper makes (``_eqrw_compiling_on_tensors``
also checks its operands are tensors); ``_eqrw_compare`` reads a scalar condition
(``t.item() < number``) for the select, guard and skip kinds.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls
# The `type: ignore` comment (dropped from the text inserted): a flag set on a function
# for Dynamo [attr-defined].

import typing as _eqrw_typing

import torch as _eqrw_torch

__all__ = ["_eqrw_typing", "_eqrw_torch", "_eqrw_compiling", "_eqrw_compare",
           "_eqrw_compiling_on_tensors"]


def _eqrw_compiling() -> bool:
    return _eqrw_torch.compiler.is_compiling()


def _eqrw_compiling_on_tensors(*values: object) -> bool:
    """Traced, and every value a tensor: what a rewrite proven only for tensors checks
    before taking its traced path (else the original code runs)."""
    return _eqrw_compiling() and all(isinstance(v, _eqrw_torch.Tensor) for v in values)


def _eqrw_compare(tensor, operator, number):
    """``tensor.item() <operator> number`` (``bool(tensor)`` for "truth"): a Python bool.
    Traced, the same comparison as a 0-d bool tensor, when comparing in the tensor's dtype
    gives the same answer as comparing Python numbers: the number is exactly
    representable in that dtype (or the tensor is bool). Otherwise the original."""
    import operator as _operator

    compare = {"<": _operator.lt, "<=": _operator.le, ">": _operator.gt,
               ">=": _operator.ge, "==": _operator.eq, "!=": _operator.ne}.get(operator)
    if (_eqrw_compiling() and isinstance(tensor, _eqrw_torch.Tensor)
            and tensor.numel() == 1):
        value = tensor.reshape(())
        if compare is None:
            return value != 0
        if (isinstance(number, (bool, int, float)) and not value.is_complex()
                and _eqrw_exact_in(number, value.dtype)):
            return compare(value, number)
    if compare is None:
        return bool(tensor)
    return compare(tensor.item(), number)


def _eqrw_exact_in(number, dtype):
    """Whether ``number`` converts to ``dtype`` and back unchanged (a trace-time check)."""
    if dtype == _eqrw_torch.bool:
        return isinstance(number, bool) or number in (0, 1)
    try:
        return float(_eqrw_torch.tensor(number, dtype=dtype).item()) == float(number) and (
            not isinstance(number, int) or abs(number) < 2 ** 53)
    except (OverflowError, RuntimeError):
        return False


_eqrw_exact_in._dynamo_marked_constant = True  # type: ignore[attr-defined]
