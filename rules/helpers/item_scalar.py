"""The ``item_scalar`` kind's helper (also called by ``scalar_flag``): ``t.item()`` kept a 0-d
tensor when traced.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_item"]


def _eqrw_item(tensor, parameters=()):
    """``tensor.item()``; traced, the same value as a detached 0-d tensor, when it is a
    tensor and so are the parameters a rewrite took for tensors."""
    if (_eqrw_compiling() and isinstance(tensor, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
        return tensor.detach().reshape(()).clone()
    return tensor.item()
