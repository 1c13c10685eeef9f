"""libcst's private API is used in one place: ``rewriting/libcst_private.codegen_state``.

Every module of the rewriter and the oracle is scanned for what reaches libcst's private
API (a ``libcst._...`` module imported or named, an underscored attribute of the ``libcst``
module, a node's ``_codegen``): all of it must lie inside that one function, which says
which libcst it needs when the installed one lacks it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rewriter", "oracle")
HOME = ROOT / "rewriter" / "rewriting" / "libcst_private.py"
FUNCTION = "codegen_state"


def private_uses(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, what)`` for each use of libcst's private API in a module's tree."""
    docstrings = {id(body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and (body := node.body) and isinstance(body[0], ast.Expr)}
    libcst_names = {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names
                    if alias.name == "libcst"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("libcst._") or (node.module == "libcst" and any(
                    a.name.startswith("_") for a in node.names)):
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.startswith("libcst._")]
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_codegen") or (
                    node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in libcst_names):
                found.append((node.lineno, f".{node.attr}"))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings and node.value.startswith("libcst._")):
            found.append((node.lineno, repr(node.value)))
    return found


def test_libcst_private_api_is_used_only_in_one_function():
    home = ast.parse(HOME.read_text(encoding="utf-8"))
    (function,) = [node for node in home.body
                   if isinstance(node, ast.FunctionDef) and node.name == FUNCTION]
    inside = range(function.lineno, (function.end_lineno or function.lineno) + 1)
    outside = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            outside += [f"{path.relative_to(ROOT)}:{line}: {what}"
                        for line, what in private_uses(tree)
                        if path != HOME or line not in inside]
    assert outside == []
    assert private_uses(home), "the scan no longer finds the one use it allows"


def test_the_scan_finds_each_kind_of_private_use():
    source = '''
"""libcst._nodes is named in this docstring only."""
import libcst as cst
import libcst._parser
from libcst._nodes.internal import CodegenState
from libcst import _nodes
node._codegen(state)
cst._version
"libcst._nodes.base"
cst.parse_module("x")
'''
    assert sorted(line for line, _ in private_uses(ast.parse(source))) == [4, 5, 6, 7, 8, 9]


def test_an_unsupported_libcst_is_named_with_the_range_needed(monkeypatch):
    from importlib.metadata import version

    from eqrewrite.rewriter.rewriting import libcst_private

    monkeypatch.setitem(sys.modules, "libcst._nodes.internal", None)  # the import fails
    with pytest.raises(libcst_private.LibcstUnsupported) as raised:
        libcst_private.codegen_state.__wrapped__()
    message = str(raised.value)
    assert f"libcst {version('libcst')} is not supported" in message
    assert f"libcst{libcst_private.SUPPORTED}" in message and "CodegenState" in message


def test_a_libcst_without_a_hook_is_refused(monkeypatch):
    import libcst as cst
    from eqrewrite.rewriter.rewriting import libcst_private

    monkeypatch.delattr(cst.CSTNode, "_codegen")
    with pytest.raises(libcst_private.LibcstUnsupported, match="no CSTNode._codegen"):
        libcst_private.codegen_state.__wrapped__()


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def test_the_installed_libcst_is_in_the_supported_range():
    from importlib.metadata import version

    from eqrewrite.rewriter.rewriting import libcst_private

    lower, upper = libcst_private.SUPPORTED.split(",")
    assert lower.startswith(">=") and upper.startswith("<")
    assert _release(lower[2:]) <= _release(version("libcst")) < _release(upper[1:])


def test_pyproject_allows_the_supported_range():
    import re

    from eqrewrite.rewriter.rewriting import libcst_private

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (requirement,) = re.findall(r'"libcst([^"]*)"', text)
    if "<" not in requirement:
        pytest.skip("pyproject.toml's libcst dependency has no upper bound yet")
    assert requirement == libcst_private.SUPPORTED
