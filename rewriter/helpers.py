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

MARKER = "# eqrewrite helpers: keep torch.compile graphs whole (see eqrewrite's README)."
END_MARKER = "# end of eqrewrite helpers."
PREAMBLE = "import torch as _eqrw_torch\n"
PREFIX = "_eqrw_"

# name -> (source, other helpers it needs). Shared helpers live here, with those of the kinds
# written before kinds could carry their own; a kind module defines its own ``HELPERS`` beside
# its kind (``kinds/scalar.py``, ``kinds/masked.py``), found by ``registered()``.
HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "_eqrw_compiling": ('''
def _eqrw_compiling():
    return _eqrw_torch.compiler.is_compiling()
''', ()),
    "_eqrw_snap": ('''
def _eqrw_snap(value):
    """The value as it is now, even if the traced code later changes it in place."""
    if _eqrw_compiling() and isinstance(value, _eqrw_torch.Tensor):
        return value.clone()
    return value
''', ("_eqrw_compiling",)),
    "_eqrw_print": ('''
@_eqrw_torch.compiler.disable  # run as is after the graph, never traced
def _eqrw_print(template, end, *values):
    print(template.format(*values), end=end)


_eqrw_torch._dynamo.config.reorderable_logging_functions.add(_eqrw_print)
''', ("_eqrw_snap",)),
    "_eqrw_log": ('''
@_eqrw_torch.compiler.disable  # run as is after the graph, never traced
def _eqrw_log(name, method, template, count, *values):
    import logging

    getattr(logging.getLogger(name), method)(template.format(*values[:count]), *values[count:])


_eqrw_torch._dynamo.config.reorderable_logging_functions.add(_eqrw_log)
''', ("_eqrw_snap",)),
    "_eqrw_warn": ('''
@_eqrw_torch.compiler.disable  # run as is after the graph, never traced
def _eqrw_warn(template, category, stacklevel, *values):
    import builtins
    import os
    import sys
    import warnings

    # Count this helper and torch's wrapper frames, so the warning names the same line
    # the original `warnings.warn(..., stacklevel=n)` named.
    frame, skipped = sys._getframe(1), 1
    torch_folder = os.path.dirname(_eqrw_torch.__file__)
    while frame is not None and frame.f_code.co_filename.startswith(torch_folder):
        frame, skipped = frame.f_back, skipped + 1
    warnings.warn(template.format(*values), getattr(builtins, category), stacklevel + skipped)


_eqrw_torch._dynamo.config.reorderable_logging_functions.add(_eqrw_warn)
''', ("_eqrw_snap",)),
    "_eqrw_write": ('''
@_eqrw_torch.compiler.disable  # run as is after the graph, never traced
def _eqrw_write(stream, template, *values):
    import sys

    getattr(sys, stream).write(template.format(*values))


_eqrw_torch._dynamo.config.reorderable_logging_functions.add(_eqrw_write)
''', ("_eqrw_snap",)),
    "_eqrw_where": ('''
def _eqrw_where(condition, if_true, if_false):
    """``if_true if condition else if_false``; traced as torch.where when that is exact."""
    if (_eqrw_compiling() and condition.numel() == 1 and if_true.shape == if_false.shape
            and if_true.dtype == if_false.dtype and if_true.device == if_false.device):
        return _eqrw_torch.where(condition.reshape(()) != 0, if_true, if_false)
    return if_true if condition else if_false
''', ("_eqrw_compiling",)),
    "_eqrw_cond": ('''
def _eqrw_cond(condition, if_true, if_false, operands):
    """``if_true(*operands) if condition else if_false(*operands)``; traced as torch.cond."""
    if _eqrw_compiling() and condition.numel() == 1:
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
def _eqrw_check(condition, expected, error, message):
    """Raise ``error(message)`` unless ``bool(condition) == expected``; traced without a
    graph break as torch._assert_async (which raises RuntimeError with the same message)."""
    if error is AssertionError and not __debug__:
        return
    if _eqrw_compiling() and condition.numel() == 1:
        holds = condition.reshape(()) != 0
        _eqrw_torch._assert_async(holds if expected else ~holds, message or error.__name__)
    elif bool(condition) != expected:
        raise error() if message is None else error(message)
''', ("_eqrw_compiling",)),
}


@cache
def registered() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every helper: those above and those the kind modules define beside their kinds."""
    from .kinds import helper_sources  # imported late: kinds need the inference, not this

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

    def add(name: str) -> None:
        for dependency in helpers[name][1]:
            add(dependency)
        if name not in ordered:
            ordered.append(name)

    for name in sorted(names):
        add(name)
    return ordered


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
