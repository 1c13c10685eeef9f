"""What the oracle executes: targets found in files by convention, or configured factories.

A self-contained file declares its target by convention: ``get_inputs()`` (or a
module-level ``inputs`` list) plus exactly one ``nn.Module`` subclass, or else
exactly one other top-level function. ``get_init_inputs()`` gives constructor
arguments. A file with several candidates names one with
``__eqrewrite_target__ = "Name"``. Libraries are validated through factories
configured in ``[tool.eqrewrite.oracle]``. This module reads files with ``ast``
only; it never imports torch or user code.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

from eqrewrite.rewriter.api import module_class_names

from ..judging.settings import CompileSettings, Target, TargetError, TargetForm, parse_settings

_HELPERS = {"get_inputs", "get_init_inputs"}
_HEADER_RE = re.compile(r"^#\s*eqrewrite-oracle:\s*(.*)$", re.MULTILINE)


def find_target(root: Path, file: Path) -> Target | None:
    """The target declared by ``file`` (a path under ``root``), None if it declares none.

    Raises TargetError when the file declares inputs but no single clear target.
    """
    text = file.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise TargetError(f"{file}:{error.lineno}: syntax error: {error.msg}") from None
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assigned = {t.id: node for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    inputs = "get_inputs" if "get_inputs" in top else "inputs" if "inputs" in assigned else None
    if inputs is None:
        return None
    relative = file.resolve().relative_to(root.resolve())
    header = " ".join(_HEADER_RE.findall(text))
    settings = parse_settings(shlex.split(header.replace(",", " "))) if header else {}
    try:
        CompileSettings().merged(settings)  # an unknown or malformed key fails here, early
    except TargetError as error:
        found = _HEADER_RE.search(text)
        assert found is not None  # the settings came from at least one header match
        line = text[: found.start()].count("\n") + 1
        raise TargetError(f"{file}:{line}: eqrewrite-oracle header: {error}") from None
    named = _named_target(assigned.get("__eqrewrite_target__"))
    modules = [name for name in module_class_names(tree) if name in top]
    functions = [n for n, node in top.items()
                 if isinstance(node, ast.FunctionDef) and n not in _HELPERS
                 and not n.startswith("_")]
    if named is not None:
        if named not in top:
            raise TargetError(f"{file}: __eqrewrite_target__ names {named!r}, which the file "
                              "does not define at top level")
        chosen = named
    elif len(modules) == 1:
        chosen = modules[0]
    elif not modules and len(functions) == 1:
        chosen = functions[0]
    else:
        candidates = ", ".join(sorted(modules or functions)) or "none"
        raise TargetError(f"{file}: ambiguous target (candidates: {candidates}); set "
                          "__eqrewrite_target__ = \"Name\" in the file")
    form = TargetForm.MODULE if isinstance(top[chosen], ast.ClassDef) else TargetForm.FUNCTION
    return Target(f"{relative.as_posix()}::{chosen}", chosen, form, relative, inputs,
                  "get_init_inputs" in top, settings)


def _named_target(node: ast.Assign | None) -> str | None:
    if node is None:
        return None
    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return node.value.value
    raise TargetError(f"line {node.lineno}: __eqrewrite_target__ must be a string literal")


def factory_targets(factory: object) -> list[Target]:
    """Targets from ``[tool.eqrewrite.oracle] factory = "pkg.mod:make"`` (or a list): the
    ``factory`` value as read from the file, checked here."""
    factories = [factory] if isinstance(factory, str) else factory
    if not isinstance(factories, list):
        raise TargetError(f"[tool.eqrewrite.oracle] factory must be 'module:function' or a "
                          f"list of them, got {factory!r}")
    targets = []
    for spec in factories:
        if not isinstance(spec, str) or ":" not in spec:
            raise TargetError(f"[tool.eqrewrite.oracle] factory must be 'module:function', "
                              f"got {spec!r}")
        targets.append(Target(spec, spec, TargetForm.FACTORY))
    return targets


def discover_targets(root: Path, files: list[Path]) -> tuple[list[Target], list[str]]:
    """Targets in ``files`` and one message per file that declares none or is ambiguous."""
    targets, problems = [], []
    for file in files:
        try:
            target = find_target(root, file)
        except TargetError as error:
            problems.append(str(error))
        else:
            if target is not None:
                targets.append(target)
            else:
                problems.append(f"{file}: declares no target (no get_inputs() or module-level "
                                "`inputs`)")
    return targets, problems
