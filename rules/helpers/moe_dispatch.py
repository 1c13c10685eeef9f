"""The ``moe_dispatch`` kind's helpers: a mixture-of-experts dispatch loop
traced densely (see ``kinds/graphbreaks/moe_dispatch.py``).
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = [
    "_eqrw_moe_cheap",
    "_eqrw_moe_dense",
    "_eqrw_moe_hit",
    "_eqrw_moe_every",
    "_eqrw_moe_experts",
    "_eqrw_moe_row",
    "_eqrw_moe_expert",
    "_eqrw_moe_route",
    "_eqrw_moe_all_pairs",
    "_eqrw_moe_keep",
]


def _eqrw_moe_cheap(mask, axis, max_factor, extra=0):
    """Whether a dispatch loop over ``mask`` (experts, then slots and tokens in either
    order: ``axis`` 1 means tokens last) is being traced and running every expert on every
    token costs at most ``max_factor`` times the routed compute (the mask's last ``extra``
    rows, one_hot's extra classes, are no expert's compute)."""
    if not (_eqrw_compiling() and isinstance(mask, _eqrw_torch.Tensor) and mask.dim() == 3):
        return False
    return max_factor is None or mask.shape[0] - extra <= max_factor * mask.shape[2 - axis]


def _eqrw_moe_dense(mask, axis, max_factor, training, extra=0):
    """Whether a traced dispatch loop over ``mask`` runs densely: cheap enough, and
    gradients off unless ``training`` (densely, an expert without a token gets a zero
    gradient, not None). Read where the loop runs (hits are often computed under
    ``torch.no_grad()``, where the grad mode says nothing about the loop)."""
    return _eqrw_moe_cheap(mask, axis, max_factor, extra) and (
        training or not _eqrw_torch.is_grad_enabled())


def _eqrw_moe_hit(mask, rows):
    """The experts with a routed token, as the loop's ``nonzero`` gives them (one row per
    expert when ``rows``, else a flat index list): for a loop that is traced as written
    although its hits were computed densely (``_eqrw_moe_every``)."""
    hit = (mask != 0).flatten(1).any(1).nonzero()
    return hit if rows else hit.squeeze(-1)


def _eqrw_moe_every(mask, rows):
    """What a densely traced loop's ``nonzero`` of hit experts stands for: every expert,
    in the same form (one row per expert when ``rows``, else a flat index list)."""
    every = _eqrw_torch.arange(mask.shape[0], device=mask.device)
    return every.unsqueeze(1) if rows else every


def _eqrw_moe_experts(mask, spare=0, wrapped=True):
    """What a densely traced dispatch loop iterates: every expert, as the loop reads its
    nonzero rows: wrapped (``e[0]``, ``e.item()``: ``_eqrw_moe_row``) or as plain ints
    (``mask[e]``, ``int(e)``). The mask's last ``spare`` rows (``one_hot``'s extra classes,
    no expert behind them) are not visited: no token may be routed there."""
    experts = mask.shape[0] - spare
    if spare:
        _eqrw_torch._assert_async(mask[experts:].eq(0).all(),
                                  "eqrewrite: a token is routed past the experts")
    if wrapped:
        return [_eqrw_moe_row(expert) for expert in range(experts)]
    return list(range(experts))



class _eqrw_moe_row:
    """An expert number standing for a nonzero row: ``e[0]`` and ``e.item()`` give the int.
    A plain object, not an int subclass: Dynamo traces its attribute and methods on every
    release (torch 2.11 cannot trace an int subclass's construction or ``int(self)``)."""

    __slots__ = ("expert",)

    def __init__(self, expert):
        self.expert = expert

    def item(self):
        return self.expert

    def __getitem__(self, index):
        if index != 0:
            raise IndexError(index)
        return self.expert


def _eqrw_moe_expert(expert):
    """The dense loop's expert as an int (its ``_eqrw_moe_row`` unwrapped), or None for
    the loop's own values (tensors)."""
    if isinstance(expert, _eqrw_moe_row):
        return expert.expert
    return expert if isinstance(expert, int) and not isinstance(expert, bool) else None


def _eqrw_moe_route(mask, expert, axis, max_factor=None, extra=0):
    """What a densely traced loop's route (``torch.where(mask[expert])``) stands for: every
    (slot, token) pair, in torch.where's order, when that is within the cost bound (a
    token routed to ``expert`` by two slots is then added twice, as by the loop); else
    every token with the slot that routes it there (any slot where none does)."""
    routed = mask[_eqrw_moe_expert(expert)] != 0
    slots = 1 - axis
    if _eqrw_moe_all_pairs(mask, max_factor, extra):
        rows = _eqrw_torch.arange(routed.shape[0], device=mask.device)
        columns = _eqrw_torch.arange(routed.shape[1], device=mask.device)
        return (rows.repeat_interleave(routed.shape[1]), columns.repeat(routed.shape[0]))
    _eqrw_torch._assert_async(routed.sum(slots).le(1).all(),
                              "eqrewrite: a token is routed twice to one expert")
    token = _eqrw_torch.arange(routed.shape[axis], device=mask.device)
    slot = routed.to(_eqrw_torch.int64).argmax(slots)
    return (token, slot) if axis == 0 else (slot, token)


def _eqrw_moe_all_pairs(mask, max_factor, extra):
    """Whether a dense loop visits every (slot, token) pair of each expert: when running
    every expert on top_k times every token still costs at most ``max_factor`` times the
    routed compute (then no routing, duplicates included, needs an assertion)."""
    return max_factor is not None and mask.shape[0] - extra <= max_factor


def _eqrw_moe_keep(value, mask, expert, token, axis, max_factor, training, extra=0):
    """The rows a dispatch loop adds for ``expert``; traced densely, zero for every token
    (or every (slot, token) pair) not routed to it (torch.where: a non-finite value there
    cannot leak)."""
    expert = _eqrw_moe_expert(expert)
    if expert is None or not _eqrw_moe_dense(mask, axis, max_factor, training, extra):
        return value
    routed = mask[expert] != 0
    if _eqrw_moe_all_pairs(mask, max_factor, extra):
        keep = routed.reshape(-1)
    else:
        keep = routed.any(1 - axis)[token]
    zero = _eqrw_torch.zeros((), dtype=value.dtype, device=value.device)
    return _eqrw_torch.where(keep.reshape((-1,) + (1,) * (value.dim() - 1)), value, zero)
