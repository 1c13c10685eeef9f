"""The ``row_selection`` kind's helpers: rows selected by a boolean mask, put through a
row-wise computation and written back, traced on every row (see
``kinds/graphbreaks/masked/row_selection.py``).
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_rows_dense", "_eqrw_rows_where"]


def _eqrw_rows_dense(source, mask, out, rounds, max_factor):
    """Whether a selection ``source[mask]`` and its write back ``out[mask] = ...`` run on
    every row: traced, gradients off, ``mask`` a bool tensor whose shape leads ``source``'s
    and ``out``'s, and the loop's ``rounds()`` (each running the computation on every row) at
    most ``max_factor``. Every edit of one rewrite asks it with the same values, so they
    decide alike; eagerly it is False at once."""
    if not (_eqrw_compiling() and not _eqrw_torch.is_grad_enabled()
            and all(isinstance(v, _eqrw_torch.Tensor) for v in (source, mask, out))
            and mask.dtype == _eqrw_torch.bool and 0 < mask.dim() <= min(source.dim(), out.dim())
            and tuple(source.shape[:mask.dim()]) == tuple(mask.shape)
            and tuple(out.shape[:mask.dim()]) == tuple(mask.shape)):
        return False
    try:
        return rounds() <= max_factor
    except TypeError:  # an iterable without a length: the rounds are unknown
        return False


def _eqrw_rows_where(out, mask, value):
    """What the write back writes on every row (``value`` computed from every row):
    ``torch.where(mask, value, out)`` (a non-finite value in a row left out cannot leak). A
    value of another dtype or device raises, as the original write (``index_put_``) does."""
    if value.dtype != out.dtype or value.device != out.device:
        raise RuntimeError(
            "Index put requires the source and destination dtypes and devices match, got "
            f"{out.dtype} on {out.device} for the destination and {value.dtype} on "
            f"{value.device} for the source.")
    keep = mask.reshape(tuple(mask.shape) + (1,) * (out.dim() - mask.dim()))
    return _eqrw_torch.where(keep, value, out)
