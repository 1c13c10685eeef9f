"""Deferred output (the ``defer`` kind): print, logging, warnings and stream writes
emitted after the graph instead of breaking it.

``_eqrw_ready`` (registering the output helpers with Dynamo) is not listed in ``__all__``: it
comes with ``_eqrw_snap``, which every deferred-output rewrite calls, so a rewritten module
holds the snapshot helper, then the registration, then the output helpers it uses.
"""

# Helpers take whatever the rewritten code passes and decide at run time what to do
# with it: untyped by design (their bodies are still checked).
# mypy: allow-untyped-defs, allow-untyped-calls
# The `type: ignore` comments (dropped from the text inserted): flags set on functions
# for Dynamo [attr-defined] and Dynamo's method replaced [method-assign] are meant;
# the frame walks stop at None, which `sys._getframe`'s stub rules out
# [redundant-expr, assignment].

from .shared import _eqrw_compiling, _eqrw_torch

__all__ = ["_eqrw_snap", "_eqrw_print", "_eqrw_log", "_eqrw_warn", "_eqrw_write"]


def _eqrw_snap(value):
    """The value as it is now, even if the traced code later changes it in place."""
    if _eqrw_compiling() and isinstance(value, _eqrw_torch.Tensor):
        return value.clone()
    return value


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

        call_function._eqrw_rerooted = True  # type: ignore[attr-defined]
        DebuggingVariable.call_function = call_function  # type: ignore[method-assign]
    return True


_eqrw_ready._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _eqrw_print(template, end, *values):
    """``print``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_print_now(template, end, *values)


def _eqrw_print_now(template, end, *values):
    print(template.format(*values), end=end)


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
    while frame is not None and (frame.f_code.co_filename.startswith(torch_folder)  # type: ignore[redundant-expr]
                                 or frame.f_code.co_name == "_eqrw_log"):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    log(message, *arguments, stacklevel=level)


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
    while frame is not None and (frame.f_code.co_filename.startswith(torch_folder)  # type: ignore[redundant-expr]
                                 or frame.f_code.co_name == "_eqrw_warn"):
        frame, skipped = frame.f_back, skipped + 1  # type: ignore[assignment]
    # No template: the message computed at run time, passed as it is (a Warning instance
    # keeps its own category, as warnings.warn gives it).
    message = values[0] if template is None else template.format(*values)
    warnings.warn(message, getattr(builtins, category), stacklevel + skipped)


def _eqrw_write(stream, template, *values):
    """``sys.<stream>.write``; traced, emitted after the graph."""
    if _eqrw_compiling():
        _eqrw_ready()
    _eqrw_write_now(stream, template, *values)


def _eqrw_write_now(stream, template, *values):
    import sys

    getattr(sys, stream).write(template.format(*values))
