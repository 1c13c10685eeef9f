"""Record which source functions Dynamo traced during a run: a profile for
``eqrewrite --scope traced:FILE``.

::

    with record_traced() as traced:
        torch.compile(model, backend="eager")(*inputs)
    traced.write("profile.txt")

Dynamo announces every frame it starts compiling (``torchdynamo start compiling NAME
FILE:LINE``) and every function it inlines (``INLINING <code object>``) in its debug log;
a temporary handler collects both while recording, with the loggers' own output
suppressed. A frame Dynamo resumes after a graph break (``torch_dynamo_resume_in_NAME_at_N``)
is mapped back to the function it came from. Each entry is written as
``relative/path.py:qualname``, the path relative to the ``sys.path`` folder it was imported
from, so that the profile matches a copy of the same package elsewhere; torch's and the
standard library's own functions are left out.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from types import CodeType

import torch
from eqrewrite.rewriter.api import function_qualnames

_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")
_LOGGERS = ("torch._dynamo.symbolic_convert", "torch._dynamo.convert_frame")
_SKIPPED = tuple(os.path.abspath(p) + os.sep for p in (
    os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"]))


@dataclass
class TracedFunctions:
    """Source functions seen traced: ``(absolute file, qualname)`` pairs."""

    functions: set[tuple[str, str]] = field(default_factory=set)

    def add(self, filename: str, name: str, line: int) -> None:
        """One frame or inlined call, by its code's file, name and first line."""
        path = os.path.abspath(filename)
        if path.startswith(_SKIPPED) or not path.endswith(".py") or not os.path.isfile(path):
            return
        qualname = _qualname(path, name, line)
        if qualname is not None:
            self.functions.add((path, qualname))

    def entries(self) -> list[str]:
        """Profile lines, sorted."""
        return sorted(f"{_relative(path)}:{name}" for path, name in self.functions)

    def write(self, path: str) -> None:
        """Write the profile that ``--scope traced:FILE`` reads."""
        with open(path, "w", encoding="utf-8") as out:
            out.write("# functions Dynamo traced, recorded by eqrewrite.oracle.traced\n")
            out.writelines(line + "\n" for line in self.entries())


class _Collector(logging.Handler):
    def __init__(self, traced: TracedFunctions):
        super().__init__(logging.DEBUG)
        self.traced = traced

    def emit(self, record: logging.LogRecord) -> None:
        message, args = record.msg, record.args
        if not isinstance(message, str) or not isinstance(args, tuple) or not args:
            return
        if message.startswith("INLINING") and isinstance(args[0], CodeType):
            code = args[0]
            self.traced.add(code.co_filename, code.co_name, code.co_firstlineno)
        elif (message.startswith("torchdynamo start compiling") and len(args) >= 3
              and isinstance(args[2], int)):
            self.traced.add(str(args[1]), str(args[0]), args[2])


@contextmanager
def record_traced() -> Iterator[TracedFunctions]:
    """Collect the functions Dynamo traces inside the ``with`` block."""
    from .judging.graphbreaks import listening  # imports torch: only when recording

    traced = TracedFunctions()
    # Recorded here, never printed by torch's handlers.
    with listening(_Collector(traced), [logging.getLogger(name) for name in _LOGGERS],
                   keep_all=True):
        yield traced


def _relative(path: str) -> str:
    """``path`` relative to the longest ``sys.path`` folder holding it (else absolute)."""
    folders = [os.path.abspath(p or os.getcwd()) + os.sep for p in sys.path]
    holding = [f for f in folders if path.startswith(f)]
    return path[len(max(holding, key=len)):].replace(os.sep, "/") if holding else path


def _qualname(path: str, name: str, line: int) -> str | None:
    """The qualified name of the function ``name`` that starts at ``line`` in ``path``
    (its ``def`` or first decorator); a resumed frame's original function."""
    resumed = _RESUME.match(name)
    functions = _functions(path)
    if resumed:
        name, inside = resumed.group(1), int(resumed.group(2))
        return next((q for q, (n, first, last) in functions.items()
                     if n == name and first <= inside <= last), None)
    return next((q for q, (n, first, _) in functions.items() if n == name and first == line),
                next((q for q, (n, _, _) in functions.items() if n == name), None))


@cache
def _functions(path: str) -> dict[str, tuple[str, int, int]]:
    """qualname -> (name, first line, last line) for every function in the file."""
    try:
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    return function_qualnames(tree)
