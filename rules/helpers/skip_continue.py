"""The ``skip_continue`` kind's helper: the value a name keeps when a data-dependent ``continue``
skips its update.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_skip"]


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
