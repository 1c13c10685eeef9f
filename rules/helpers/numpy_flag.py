"""The ``numpy_flag`` kind's helper: a flag kept on a module as a Python bool when NumPy gave it.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

__all__ = ["_eqrw_plain_flag"]


def _eqrw_plain_flag(value):
    """``bool(value)`` for a NumPy bool, integer or float scalar (which Dynamo would read as
    a tensor, and whose truth never changes), else ``value`` itself. NumPy is already
    imported when a value is one of its scalars."""
    if type(value).__module__ == "numpy":
        import numpy

        if isinstance(value, numpy.bool_ | numpy.integer | numpy.floating):
            return bool(value)
    return value
