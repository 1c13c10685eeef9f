"""The ``mask_scatter`` kind's helper: a write through a boolean mask, traced as ``torch.where``
into the whole tensor.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_mask_scatter"]


def _eqrw_mask_scatter(out, index, mask, values, form):
    """``out[index()] = values(pick)`` (``form`` "index_put_": ``out.index_put_(index(),
    ...)``), ``pick(x)`` being ``x[index()]``: the original statement. Traced, when ``mask``
    is a bool tensor whose shape leads ``out``'s and every selected tensor has ``out``'s
    shape, ``values`` on the whole tensors and ``torch.where`` into ``out``, in place."""
    if (_eqrw_compiling() and isinstance(mask, _eqrw_torch.Tensor)
            and isinstance(out, _eqrw_torch.Tensor) and mask.dtype == _eqrw_torch.bool
            and tuple(out.shape[:mask.dim()]) == tuple(mask.shape)):
        whole_shapes = []

        def whole(source):
            whole_shapes.append(isinstance(source, _eqrw_torch.Tensor)
                                and source.shape == out.shape)
            return source

        value = values(whole)
        if (all(whole_shapes) and isinstance(value, _eqrw_torch.Tensor)
                and value.shape == out.shape and value.dtype == out.dtype
                and value.device == out.device):
            keep = mask.reshape(tuple(mask.shape) + (1,) * (out.dim() - mask.dim()))
            out.copy_(_eqrw_torch.where(keep, value, out))
            return
    if form == "index_put_":
        out.index_put_(index(), values(lambda source: source[index()]))
    else:
        out[index()] = values(lambda source: source[index()])
