"""The ``scalar_flag`` kind's helper: a condition on a name that holds ``t.item()`` eagerly and may
hold ``t`` when traced.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compare, _eqrw_torch

__all__ = ["_eqrw_truth"]


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
