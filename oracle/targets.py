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
from dataclasses import dataclass, field, replace
from pathlib import Path

from eqrewrite.rewriter.api import module_class_names

_HELPERS = {"get_inputs", "get_init_inputs"}
_HEADER_RE = re.compile(r"^#\s*eqrewrite-oracle:\s*(.*)$", re.MULTILINE)


class TargetError(Exception):
    """A file or configuration that does not name a runnable target."""


@dataclass(frozen=True)
class CompileSettings:
    """How a target is compiled: settable per run, per target (header) or in configuration."""

    backend: str = "eager"
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    inductor_config: tuple[tuple[str, object], ...] = ()

    def merged(self, overrides: dict[str, object]) -> CompileSettings:
        """A copy with ``overrides`` applied (keys as in the header comment)."""
        changes: dict[str, object] = {}
        inductor = dict(self.inductor_config)
        for key, value in overrides.items():
            if key.startswith("inductor."):
                inductor[key.removeprefix("inductor.")] = value
            elif key in ("backend", "mode"):
                changes[key] = str(value)
            elif key in ("dynamic", "fullgraph"):
                changes[key] = value if isinstance(value, bool) or value is None else _to_bool(
                    str(value), key)
            else:
                raise TargetError(f"unknown compile setting {key!r} (known: backend, mode, "
                                  "dynamic, fullgraph, inductor.<option>)")
        return replace(self, **changes, inductor_config=tuple(sorted(inductor.items())))


@dataclass(frozen=True)
class Target:
    """One callable to validate, and where its code lives."""

    name: str                     # shown in reports: "mlp.py::Mlp"
    attribute: str                # class or function name, or factory "pkg.mod:make"
    kind: str                     # "module" | "function" | "factory"
    file: Path | None = None      # relative to the tree root (None for factories)
    inputs: str = "get_inputs"    # "get_inputs" or "inputs"
    has_init_inputs: bool = False
    settings: dict[str, object] = field(default_factory=dict, hash=False, compare=False)

    @property
    def module_name(self) -> str | None:
        """Dotted import name of ``file`` relative to the tree root."""
        if self.file is None:
            return None
        parts = list(self.file.with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def parse_value(text: str) -> object:
    """``true``/``false``/``none``, numbers, or the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _to_bool(text: str, key: str) -> bool:
    value = parse_value(text)
    if not isinstance(value, bool):
        raise TargetError(f"{key} must be true or false, got {text!r}")
    return value


def parse_settings(pairs: list[str]) -> dict[str, object]:
    """``["backend=inductor", "inductor.max_autotune=true"]`` to a dict."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TargetError(f"expected key=value, got {pair!r}")
        settings[key.strip()] = parse_value(value.strip())
    return settings


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
    kind = "module" if isinstance(top[chosen], ast.ClassDef) else "function"
    return Target(f"{relative.as_posix()}::{chosen}", chosen, kind, relative, inputs,
                  "get_init_inputs" in top, settings)


def _named_target(node: ast.Assign | None) -> str | None:
    if node is None:
        return None
    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return node.value.value
    raise TargetError(f"line {node.lineno}: __eqrewrite_target__ must be a string literal")


def factory_targets(config: dict) -> list[Target]:
    """Targets from ``[tool.eqrewrite.oracle] factory = "pkg.mod:make"`` (or a list)."""
    factories = config.get("factory", [])
    if isinstance(factories, str):
        factories = [factories]
    targets = []
    for spec in factories:
        if not isinstance(spec, str) or ":" not in spec:
            raise TargetError(f"[tool.eqrewrite.oracle] factory must be 'module:function', "
                              f"got {spec!r}")
        targets.append(Target(spec, spec, "factory"))
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
    return targets, problems
