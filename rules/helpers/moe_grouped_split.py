"""The ``moe_grouped_split`` kind's helpers: a grouped mixture-of-experts
split whose counts stay a tensor when traced (see ``kinds/graphbreaks/moe_grouped_split.py``).
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = [
    "_eqrw_moe_counts",
    "_eqrw_moe_keep_counts",
    "_eqrw_moe_groups",
    "_eqrw_moe_grouped",
    "_eqrw_moe_merge",
]


class _eqrw_moe_counts:
    """A grouped router's per-expert counts, kept as a tensor while traced (eagerly the
    router returns ``counts.tolist()``) for the experts' split (``_eqrw_moe_grouped``). Read
    as a list, it is that list (``.tolist()`` then: the original's values and break)."""

    __slots__ = ("counts",)

    def __init__(self, counts):
        self.counts = counts

    def __iter__(self):
        return iter(self.counts.tolist())

    def __len__(self):
        return self.counts.shape[0]

    def __getitem__(self, index):
        return self.counts.tolist()[index]

    def __repr__(self):
        return repr(self.counts.tolist())


def _eqrw_moe_keep_counts(counts, max_factor, training):
    """Whether a grouped router keeps its counts as a tensor: traced, a 1-D integer tensor
    with at most ``max_factor`` experts (each expert then runs on every grouped row:
    ``num_experts`` times the routed compute), gradients off unless ``training``."""
    return (_eqrw_compiling() and isinstance(counts, _eqrw_torch.Tensor)
            and counts.dim() == 1 and not counts.is_floating_point()
            and not counts.is_complex() and counts.dtype != _eqrw_torch.bool
            and (max_factor is None or counts.shape[0] <= max_factor)
            and (training or not _eqrw_torch.is_grad_enabled()))


class _eqrw_moe_groups:
    """What a densely traced grouped split stands for: every chunk is every row (the
    experts' results are merged by ``_eqrw_moe_merge``)."""

    __slots__ = ("rows", "counts")

    def __init__(self, rows, counts):
        self.rows = rows
        self.counts = counts

    def __len__(self):
        return self.counts.shape[0]

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError("tuple index out of range")
        return self.rows


def _eqrw_moe_grouped(inputs, sizes, experts, max_factor, training):
    """The experts' split of ``inputs`` by the carried counts ``sizes``: densely every row
    (``_eqrw_moe_groups``) when traced with gradients off (unless ``training``) and a loop
    over exactly the counted experts; otherwise the original split of ``counts.tolist()``."""
    counts = sizes.counts
    if (_eqrw_compiling() and isinstance(inputs, _eqrw_torch.Tensor) and inputs.dim() >= 1
            and isinstance(experts, int) and experts == counts.shape[0]
            and (max_factor is None or experts <= max_factor)
            and (training or not _eqrw_torch.is_grad_enabled())):
        _eqrw_torch._assert_async((counts >= 0).all(), "eqrewrite: a negative split size")
        _eqrw_torch._assert_async(counts.sum() == inputs.shape[0],
                                  "eqrewrite: the split sizes do not sum to the rows")
        return _eqrw_moe_groups(inputs, counts)
    return inputs.split(counts.tolist(), 0)


def _eqrw_moe_merge(outputs, groups):
    """What ``torch.cat(outputs, dim=0)`` of a densely traced grouped split stands for: row
    ``r`` from the expert whose chunk holds it (``torch.where``, in the loop's order)."""
    counts = groups.counts
    if len(outputs) != counts.shape[0]:
        raise RuntimeError("eqrewrite: one output per expert expected")
    rows = _eqrw_torch.arange(groups.rows.shape[0], device=counts.device, dtype=counts.dtype)
    expert = _eqrw_torch.searchsorted(counts.cumsum(0), rows, right=True)
    merged = outputs[0]
    for index in range(1, len(outputs)):
        value = outputs[index]
        keep = (expert == index).reshape((-1,) + (1,) * (value.dim() - 1))
        merged = _eqrw_torch.where(keep, value, merged)
    return merged
