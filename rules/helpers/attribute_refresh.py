"""The ``attribute_refresh`` kind's helper: an attribute refreshed with a converted copy of itself.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling

__all__ = ["_eqrw_refresh"]


def _eqrw_refresh(owner, name, value):
    """``setattr(owner, name, value)``, ``value`` the attribute converted (``.to(...)``);
    traced, the store is left out when the conversion returned the attribute itself."""
    if not _eqrw_compiling() or value is not getattr(owner, name):
        setattr(owner, name, value)
