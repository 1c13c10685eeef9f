"""Selects (the ``select`` kind): ``torch.where`` and ``torch.cond`` in place of a
data-dependent ``if``.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_where", "_eqrw_select", "_eqrw_select_cond", "_eqrw_cond"]


def _eqrw_where(condition, if_true, if_false):
    """``if_true if condition else if_false``; traced as torch.where when that is exact."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and isinstance(if_true, _eqrw_torch.Tensor)
            and isinstance(if_false, _eqrw_torch.Tensor)
            and condition.numel() == 1 and if_true.shape == if_false.shape
            and if_true.dtype == if_false.dtype and if_true.device == if_false.device):
        return _eqrw_torch.where(condition.reshape(()) != 0, if_true, if_false)
    return if_true if condition else if_false


def _eqrw_select(parameters, condition, if_true, if_false):
    """``if_true() if condition else if_false()``: one branch evaluated, as written. Traced,
    when the parameters the rewrite took for tensors are tensors (Dynamo specialises these
    checks, so no branch remains), both branches and torch.where, as ``_eqrw_where``."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
        return _eqrw_where(condition, if_true(), if_false())
    return if_true() if condition else if_false()


def _eqrw_select_cond(parameters, condition, if_true, if_false, operands):
    """``if_true(*operands) if condition else if_false(*operands)``: one branch evaluated,
    as written. Traced, when the parameters the rewrite took for tensors are tensors,
    torch.cond, as ``_eqrw_cond`` (branches that call layers or non-elementwise methods)."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
        return _eqrw_cond(condition, if_true, if_false, operands)
    return if_true(*operands) if condition else if_false(*operands)


def _eqrw_cond(condition, if_true, if_false, operands):
    """``if_true(*operands) if condition else if_false(*operands)``; traced as torch.cond."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and condition.numel() == 1):
        def unaliased(branch):
            def run(*args):  # torch.cond refuses a branch that returns an operand itself
                out = branch(*args)
                return out.clone() if any(out is arg for arg in args) else out
            return run
        return _eqrw_torch.cond(condition.reshape(()) != 0, unaliased(if_true),
                                unaliased(if_false), operands)
    return if_true(*operands) if condition else if_false(*operands)
