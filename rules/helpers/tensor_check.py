"""The ``tensor_check`` kind's helper: torch's tensor checks (``torch._check_tensor_all``) inside
the graph.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_check_tensor_all"]


def _eqrw_check_tensor_all(check, at, *args, **kwargs):
    """``check(*args, **kwargs)``, a torch tensor check whose condition is ``args[at]``;
    traced, the same check inside the graph (``torch._assert_async``) instead of a break."""
    condition = args[at]
    if not (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)):
        return check(*args, **kwargs)
    _eqrw_torch._assert_async(condition.all(),
                              "Expected all elements of the checked condition to be True")
