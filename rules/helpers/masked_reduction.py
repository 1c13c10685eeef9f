"""The ``masked_reduction`` kind's helper: a reduction of a masked selection, traced with
``torch.where``.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls
# The `type: ignore` comments (dropped from the text inserted): the fill is a bool,
# a float or an int, as the masked tensor's dtype needs [assignment].

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_masked"]


def _eqrw_masked(x, mask, reduction):
    """``getattr(x[mask], reduction)()``; traced with torch.where when the mask covers x."""
    if not (_eqrw_compiling() and isinstance(x, _eqrw_torch.Tensor)
            and isinstance(mask, _eqrw_torch.Tensor) and mask.dtype == _eqrw_torch.bool
            and mask.shape == x.shape):
        return getattr(x[mask], reduction)()
    if reduction == "numel":
        return mask.sum()
    if reduction == "sum":
        return _eqrw_torch.where(mask, x, _eqrw_torch.zeros((), dtype=x.dtype)).sum()
    if reduction == "mean":
        total = _eqrw_torch.where(mask, x, _eqrw_torch.zeros((), dtype=x.dtype)).sum()
        return total / mask.sum()
    _eqrw_torch._assert_async(mask.any(), f"{reduction}(): the masked selection is empty")
    lowest = reduction in ("max", "amax")
    if x.dtype == _eqrw_torch.bool:
        fill = not lowest
    elif x.is_floating_point():
        fill = -float("inf") if lowest else float("inf")  # type: ignore[assignment]
    else:
        info = _eqrw_torch.iinfo(x.dtype)
        fill = info.min if lowest else info.max  # type: ignore[assignment]
    return getattr(_eqrw_torch.where(mask, x, fill), reduction)()
