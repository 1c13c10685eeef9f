"""Source text of the small helpers that graph-break rewrites insert into a module.

Rewritten code calls these instead of inlining torch.where/torch.cond/... so that
eager execution stays exactly the original (every helper takes the original path
unless ``torch.compiler.is_compiling()``), while Dynamo, which constant-folds
that test, traces the graph-friendly path. They are inserted once per module,
after its imports, under one marker comment, and import torch under a private
alias so they work whatever the module calls torch. This module holds text only:
the rewriter never imports torch.
"""

from __future__ import annotations

from functools import cache

from ..analysis.knowledge import SCRIPTED_EXCEPTIONS
from ..syntax.marks import END_MARKER, MARKER, PREFIX

PREAMBLE = "import typing as _eqrw_typing\n\nimport torch as _eqrw_torch\n"

# name -> (source, other helpers it needs). Shared helpers live here, with those of the kinds
# written before kinds could carry their own; a kind module defines its own ``HELPERS`` beside
# its kind (``kinds/scalar.py``, ``kinds/masked.py``), found by ``registered()``.
HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "_eqrw_compiling": ('''
def _eqrw_compiling() -> bool:
    return _eqrw_torch.compiler.is_compiling()
''', ()),
    "_eqrw_snap": ('''
def _eqrw_snap(value):
    """The value as it is now, even if the traced code later changes it in place."""
    if _eqrw_compiling() and isinstance(value, _eqrw_torch.Tensor):
        return value.clone()
    return value
''', ("_eqrw_compiling",)),
    "_eqrw_ready": ('''
def _eqrw_ready():
    """Register the deferred-output helpers with Dynamo, which then emits their calls after
    the graph instead of breaking it. Called only while tracing, before their first call:
    marked as a constant result (what ``torch._dynamo.assume_constant_result`` marks), so
    Dynamo runs it for real at trace time. Importing this module never imports Dynamo."""
    import torch._dynamo

    for name in ("_eqrw_print_now", "_eqrw_log_now", "_eqrw_warn_now", "_eqrw_write_now"):
        function = globals().get(name)
        if function is not None and not getattr(function, "_eqrw_deferred", False):
            # Emitted after the graph, the call must run as plain Python, not as a new frame
            # for Dynamo to trace.
            function = torch._dynamo.disable(function)
            function._eqrw_deferred = True
            globals()[name] = function
        if function is not None:
            torch._dynamo.config.reorderable_logging_functions.add(function)
    # Dynamo (2.13) keeps a reordered call made in an inlined function (a submodule's
    # forward, a helper) on that function's translator and never emits it: the message
    # is lost. Calls of these helpers are handed to the frame's root translator instead,
    # which emits them after the graph like a call made at the top. Other functions are
    # left as Dynamo handles them.
    try:
        from torch._dynamo.variables.misc import DebuggingVariable
    except ImportError:
        return True
    original = DebuggingVariable.call_function
    if not getattr(original, "_eqrw_rerooted", False):
        def call_function(self, tx, args, kwargs):
            if getattr(self.value, "_eqrw_deferred", False) and getattr(tx, "parent", None):
                tx = tx.output.root_tx
            return original(self, tx, args, kwargs)

        call_function._eqrw_rerooted = True
        DebuggingVariable.call_function = call_function
    return True


_eqrw_ready._dynamo_marked_constant = True
''', ("_eqrw_compiling",)),
    "_eqrw_print": ('''
def _eqrw_print(template, end, *values):
    """``print``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_print_now(template, end, *values)


def _eqrw_print_now(template, end, *values):
    print(template.format(*values), end=end)
''', ("_eqrw_snap", "_eqrw_ready")),
    "_eqrw_log": ('''
def _eqrw_log(name, method, template, count, *values):
    """``logging.getLogger(name).<method>(message, *args)``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_log_now(name, method, template, count, *values)


def _eqrw_log_now(name, method, template, count, *values):
    import logging
    import os
    import sys

    logger = logging.getLogger(name)
    log = getattr(logger, method)
    message, arguments = template.format(*values[:count]), values[count:]
    if getattr(log, "__module__", None) != logging.__name__:
        log(message, *arguments)  # e.g. warning_once: its own frame is the record's origin
        return
    # The record names the caller's function and line, as the original call did: skip
    # this helper, the one above and any torch wrapper frames.
    frame, level = sys._getframe(1), 2
    torch_folder = os.path.dirname(_eqrw_torch.__file__)
    while frame is not None and (frame.f_code.co_filename.startswith(torch_folder)
                                 or frame.f_code.co_name == "_eqrw_log"):
        frame, level = frame.f_back, level + 1
    log(message, *arguments, stacklevel=level)
''', ("_eqrw_snap", "_eqrw_ready")),
    "_eqrw_warn": ('''
def _eqrw_warn(template, category, stacklevel, *values):
    """``warnings.warn``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_warn_now(template, category, stacklevel, *values)


def _eqrw_warn_now(template, category, stacklevel, *values):
    import builtins
    import os
    import sys
    import warnings

    # Count these helpers and torch's wrapper frames, so the warning names the same line
    # the original `warnings.warn(..., stacklevel=n)` named.
    frame, skipped = sys._getframe(1), 1
    torch_folder = os.path.dirname(_eqrw_torch.__file__)
    while frame is not None and (frame.f_code.co_filename.startswith(torch_folder)
                                 or frame.f_code.co_name == "_eqrw_warn"):
        frame, skipped = frame.f_back, skipped + 1
    warnings.warn(template.format(*values), getattr(builtins, category), stacklevel + skipped)
''', ("_eqrw_snap", "_eqrw_ready")),
    "_eqrw_write": ('''
def _eqrw_write(stream, template, *values):
    """``sys.<stream>.write``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_write_now(stream, template, *values)


def _eqrw_write_now(stream, template, *values):
    import sys

    getattr(sys, stream).write(template.format(*values))
''', ("_eqrw_snap", "_eqrw_ready")),
    "_eqrw_where": ('''
def _eqrw_where(condition, if_true, if_false):
    """``if_true if condition else if_false``; traced as torch.where when that is exact."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and isinstance(if_true, _eqrw_torch.Tensor)
            and isinstance(if_false, _eqrw_torch.Tensor)
            and condition.numel() == 1 and if_true.shape == if_false.shape
            and if_true.dtype == if_false.dtype and if_true.device == if_false.device):
        return _eqrw_torch.where(condition.reshape(()) != 0, if_true, if_false)
    return if_true if condition else if_false
''', ("_eqrw_compiling",)),
    "_eqrw_select": ('''
def _eqrw_select(parameters, condition, if_true, if_false):
    """``if_true() if condition else if_false()``: one branch evaluated, as written. Traced,
    when the parameters the rewrite took for tensors are tensors (Dynamo specialises these
    checks, so no branch remains), both branches and torch.where, as ``_eqrw_where``."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
        return _eqrw_where(condition, if_true(), if_false())
    return if_true() if condition else if_false()
''', ("_eqrw_where",)),
    "_eqrw_select_cond": ('''
def _eqrw_select_cond(parameters, condition, if_true, if_false, operands):
    """``if_true(*operands) if condition else if_false(*operands)``: one branch evaluated,
    as written. Traced, when the parameters the rewrite took for tensors are tensors,
    torch.cond, as ``_eqrw_cond`` (branches that call layers or non-elementwise methods)."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and all(isinstance(p, _eqrw_torch.Tensor) for p in parameters)):
        return _eqrw_cond(condition, if_true, if_false, operands)
    return if_true(*operands) if condition else if_false(*operands)
''', ("_eqrw_cond",)),
    "_eqrw_compare": ('''
def _eqrw_compare(tensor, operator, number):
    """``tensor.item() <operator> number`` (``bool(tensor)`` for "truth"): a Python bool.
    Traced, the same comparison as a 0-d bool tensor, when comparing in the tensor's dtype
    gives the same answer as comparing Python numbers: the number is exactly
    representable in that dtype (or the tensor is bool). Otherwise the original."""
    import operator as _operator

    compare = {"<": _operator.lt, "<=": _operator.le, ">": _operator.gt,
               ">=": _operator.ge, "==": _operator.eq, "!=": _operator.ne}.get(operator)
    if (_eqrw_compiling() and isinstance(tensor, _eqrw_torch.Tensor)
            and tensor.numel() == 1):
        value = tensor.reshape(())
        if compare is None:
            return value != 0
        if (isinstance(number, (bool, int, float)) and not value.is_complex()
                and _eqrw_exact_in(number, value.dtype)):
            return compare(value, number)
    if compare is None:
        return bool(tensor)
    return compare(tensor.item(), number)


def _eqrw_exact_in(number, dtype):
    """Whether ``number`` converts to ``dtype`` and back unchanged (a trace-time check)."""
    if dtype == _eqrw_torch.bool:
        return isinstance(number, bool) or number in (0, 1)
    try:
        return float(_eqrw_torch.tensor(number, dtype=dtype).item()) == float(number) and (
            not isinstance(number, int) or abs(number) < 2 ** 53)
    except (OverflowError, RuntimeError):
        return False


_eqrw_exact_in._dynamo_marked_constant = True
''', ("_eqrw_compiling",)),
    "_eqrw_cond": ('''
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
''', ("_eqrw_compiling",)),
    "_eqrw_check": ('''
def _eqrw_check(condition: _eqrw_torch.Tensor, expected: bool, error: str,
                message: _eqrw_typing.Optional[str]) -> None:
    """Raise the builtin exception ``error(message)`` unless ``bool(condition) == expected``.
    Traced, ``torch._assert_async`` (a RuntimeError with the same message) instead of a graph
    break; under TorchScript, the same ``raise`` TorchScript gives the original code."""
    if _eqrw_torch.jit.is_scripting():
        if bool(condition) != expected:
            text = "" if message is None else message
{SCRIPTED_RAISES}            raise RuntimeError(text)
    elif (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
          and condition.numel() == 1):
        holds = condition.reshape(()) != 0
        _eqrw_torch._assert_async(holds if expected else ~holds,
                                  error if message is None else message)
    elif bool(condition) != expected:
        _eqrw_raise(error, message)


@_eqrw_torch.jit.unused
def _eqrw_raise(error: str, message: _eqrw_typing.Optional[str]) -> None:
    import builtins

    raise getattr(builtins, error)() if message is None else getattr(builtins, error)(message)
''', ("_eqrw_compiling",)),
    "_eqrw_fails": ('''
def _eqrw_fails(condition: _eqrw_torch.Tensor, message: str) -> bool:
    """``bool(condition)`` for ``if condition: raise ...`` kept as written. Traced,
    ``torch._assert_async`` checks it inside the graph (a RuntimeError with ``message``)
    and this is False, so the raise is not traced."""
    if (not _eqrw_torch.jit.is_scripting() and _eqrw_compiling()
            and isinstance(condition, _eqrw_torch.Tensor) and condition.numel() == 1):
        _eqrw_torch._assert_async(condition.reshape(()) == 0, message)
        return False
    return bool(condition)
''', ("_eqrw_compiling",)),
    "_eqrw_assert": ('''
def _eqrw_assert(condition: _eqrw_torch.Tensor, message: _eqrw_typing.Optional[str]) -> bool:
    """``bool(condition)`` for an ``assert`` statement (which ``python -O`` removes, call
    included). Traced, ``torch._assert_async`` checks it inside the graph and this is True."""
    if (not _eqrw_torch.jit.is_scripting() and _eqrw_compiling()
            and isinstance(condition, _eqrw_torch.Tensor) and condition.numel() == 1):
        _eqrw_torch._assert_async(condition.reshape(()) != 0,
                                  "AssertionError" if message is None else message)
        return True
    return bool(condition)
''', ("_eqrw_compiling",)),
}


_CHECK, _NEEDS = HELPERS["_eqrw_check"]
HELPERS["_eqrw_check"] = (_CHECK.replace("{SCRIPTED_RAISES}", "".join(
    f"            if error == {name!r}:\n                raise {name}(text)\n"
    for name in SCRIPTED_EXCEPTIONS)), _NEEDS)


@cache
def registered() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every helper: those above and those the kind modules define beside their kinds."""
    from ..kinds import helper_sources  # imported late: kinds need the inference, not this

    found = dict(HELPERS)
    for name, entry in helper_sources().items():
        if name in found or not name.startswith(PREFIX):
            raise ImportError(f"kind helper {name!r} must start with {PREFIX!r} and may not "
                              "redefine a helper of helpers.py")
        found[name] = entry
    return found


def closure(names: set[str]) -> list[str]:
    """``names`` and every helper they need, dependencies first, in a stable order."""
    helpers = registered()
    ordered: list[str] = []
    for name in sorted(names):
        _add_with_dependencies(name, helpers, ordered)
    return ordered


def _add_with_dependencies(name: str, helpers: dict[str, tuple[str, tuple[str, ...]]],
                           ordered: list[str]) -> None:
    """Append ``name`` to ``ordered`` after the helpers it needs (not a closure calling
    itself: that would be a reference cycle, left for the garbage collector)."""
    for dependency in helpers[name][1]:
        _add_with_dependencies(dependency, helpers, ordered)
    if name not in ordered:
        ordered.append(name)


def source_of(names: list[str], with_preamble: bool) -> str:
    """The code defining ``names``, after the private torch import if asked."""
    helpers = registered()
    return (PREAMBLE if with_preamble else "") + "".join(
        "\n" + helpers[name][0] for name in names)


def strip_block(text: str) -> str:
    """``text`` without its helper block (markers included): what rule examples show."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if not starts or not ends:
        return text
    start, end = starts[0], ends[-1] + 1
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    while end < len(lines) and not lines[end].strip():
        end += 1
    return "".join(lines[:start] + lines[end:])
