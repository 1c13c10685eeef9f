"""The ``masked_cross_entropy`` kind's helpers: a cross-entropy over the rows a mask selects,
traced over every row with the rows left out ignored (see
``kinds/graphbreaks/masked/masked_cross_entropy.py``).
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_ce_dense", "_eqrw_ce_logits", "_eqrw_ce_labels"]


def _eqrw_ce_dense(logits, labels, mask):
    """Whether the selections ``logits[mask]`` and ``labels[mask]`` feeding a cross-entropy
    are traced over every row: traced, all three tensors, ``mask`` bool of the (integer)
    labels' shape, which is the logits' but for their last axis (the classes)."""
    return (_eqrw_compiling()
            and all(isinstance(v, _eqrw_torch.Tensor) for v in (logits, labels, mask))
            and mask.dtype == _eqrw_torch.bool and not labels.is_floating_point()
            and not labels.is_complex() and tuple(labels.shape) == tuple(mask.shape)
            and logits.dim() == mask.dim() + 1
            and tuple(logits.shape[:-1]) == tuple(mask.shape))


def _eqrw_ce_logits(logits, mask):
    """Every row of ``logits``, the rows ``mask`` leaves out set to 0: their labels are
    ignored, and a non-finite value there reaches neither the loss nor the gradient."""
    zero = _eqrw_torch.zeros((), dtype=logits.dtype, device=logits.device)
    return _eqrw_torch.where(mask.unsqueeze(-1), logits, zero).contiguous()


def _eqrw_ce_labels(labels, mask):
    """Every label, those ``mask`` leaves out set to the loss's ``ignore_index`` (-100)."""
    ignored = _eqrw_torch.full((), -100, dtype=labels.dtype, device=labels.device)
    return _eqrw_torch.where(mask, labels, ignored).contiguous()
