"""libcst's private API, used through one function: ``codegen_state``.

``codegen.py`` watches libcst generate a unit's code: once to find the nodes at the
character ranges an edit names (and the nodes around them), once to note where each
rewritten node lands in the new code. Both hook into libcst's own code generation, which
libcst does not export: they subclass ``CodegenState`` (from ``libcst._nodes.internal``) and
call a node's ``_codegen(state)``, the method behind ``Module.code``. The public ways cost
more on long files: ``PositionProvider`` builds line and column objects for every node of a
unit, and ``Module.code_for_node`` generates the code again for every edit.

What this relies on: ``CodegenState(default_indent, default_newline)`` with its ``tokens``
and ``indent_tokens`` lists; the hooks every node's ``_codegen`` calls on it:
``before_codegen``, ``after_codegen``, ``add_token``, ``add_indent_tokens`` and
``record_syntactic_position``; and ``CSTNode._codegen(state)``. Checked with libcst 1.9.0;
``SUPPORTED`` is the range pyproject.toml allows. Should a release move or change them,
``codegen_state`` says so, naming the version found and that range, rather than the
rewriter failing somewhere inside libcst.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, cast

import libcst as cst

SUPPORTED = ">=1.1,<2"  # libcst versions (pyproject.toml's dependency)
_HOOKS = ("before_codegen", "after_codegen", "add_token", "add_indent_tokens",
          "record_syntactic_position")


class LibcstUnsupported(ImportError):
    """The installed libcst lacks the private code generation the rewriter relies on."""


@functools.cache
def codegen_state() -> type[CodegenBase]:
    """libcst's ``CodegenState`` (private), subclassed with ``generate(node)``, which runs the
    node's private ``_codegen`` with the state; the only use of libcst's private API.
    ``LibcstUnsupported`` when the installed libcst lacks any of it."""
    try:
        from libcst._nodes.internal import CodegenState
    except ImportError as error:
        raise LibcstUnsupported(_unsupported(f"libcst._nodes.internal.CodegenState: {error}")
                                ) from error
    missing = [f"CodegenState.{name}" for name in _HOOKS if not hasattr(CodegenState, name)]
    if not callable(getattr(cst.CSTNode, "_codegen", None)):
        missing.append("CSTNode._codegen")
    if missing:
        raise LibcstUnsupported(_unsupported("no " + ", ".join(missing)))

    class Codegen(CodegenState):
        def generate(self, node: cst.CSTNode) -> None:
            node._codegen(self)

    return cast("type[CodegenBase]", Codegen)  # CodegenBase describes it to mypy


def _unsupported(what: str) -> str:
    try:
        found = version("libcst")
    except PackageNotFoundError:
        found = "(version unknown)"
    return (f"libcst {found} is not supported (eqrewrite needs libcst{SUPPORTED}, whose "
            f"private code generation it uses): {what}")


if TYPE_CHECKING:
    class CodegenBase:
        """What ``codegen.py`` uses of the class ``codegen_state`` returns, for mypy."""

        tokens: list[str]
        indent_tokens: list[str]

        def __init__(self, default_indent: str, default_newline: str) -> None: ...

        def generate(self, node: cst.CSTNode) -> None: ...

        def add_token(self, value: str) -> None: ...

        def add_indent_tokens(self) -> None: ...

        def before_codegen(self, node: cst.CSTNode) -> None: ...

        def after_codegen(self, node: cst.CSTNode) -> None: ...

        def record_syntactic_position(self, node: cst.CSTNode, *,
                                      start_node: cst.CSTNode | None = None,
                                      end_node: cst.CSTNode | None = None
                                      ) -> AbstractContextManager[None]: ...
else:
    CodegenBase = codegen_state()
