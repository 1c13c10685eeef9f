"""The ``fold_tests`` kind's helper: which arm of an ``if``/``elif`` chain over one-element tensors
is taken, read once.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_torch

__all__ = ["_eqrw_first_true"]


def _eqrw_first_true(*tests):
    """How many of the one-element tensors ``tests`` are false before the first true one
    (``len(tests)`` when none is), as a 0-d integer tensor: the arm an ``if``/``elif``
    chain over them takes. ``int()`` of it reads the data once, where the chain read each
    test it reached."""
    device = tests[0].device
    false = _eqrw_torch.stack(
        [_eqrw_torch.logical_not(test.reshape(())).to(device) for test in tests])
    return false.int().cumprod(0).sum()
