"""What a target is and how it is compiled and judged: plain values shared by every part of the
oracle, the worker processes and the reproducers (this module imports neither torch nor the
rewriter, so a reproducer can carry a copy of it).

Settings come from the command line, a target's header comment
(``# eqrewrite-oracle: backend=inductor dynamo.capture_scalar_outputs=true``) and
``[tool.eqrewrite.oracle]``; the command line wins over the header, the header over the
configuration.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_BACKEND = "inductor"  # what torch.compile uses: where nearly all silent bugs live
_BOOLEAN_KEYS = ("dynamic", "fullgraph", "strict", "raises", "inference")
_PREFIXES = ("inductor.", "dynamo.")
KNOWN_KEYS = ("backend", "mode", *_BOOLEAN_KEYS, "tolerance-scale")


class TargetError(Exception):
    """A file or configuration that does not name a runnable target, or a bad setting."""


class TargetForm(enum.Enum):
    """How a target is built: a module class, a plain function, or a configured factory."""

    MODULE = "module"
    FUNCTION = "function"
    FACTORY = "factory"


@dataclass(frozen=True)
class CompileSettings:
    """How a target is compiled and judged.

    ``strict`` also compares the signs of zero and NaN; ``raises`` declares that the target is
    meant to raise, so its exception (type and message) is the outcome compared;
    ``inference`` calls the target under ``torch.no_grad()`` in every run and compares no
    gradients (Inductor then compiles an inference graph, where ``inductor.freezing`` acts).
    """

    backend: str = DEFAULT_BACKEND
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    inductor_config: tuple[tuple[str, object], ...] = ()
    dynamo_config: tuple[tuple[str, object], ...] = ()
    strict: bool = False
    raises: bool = False
    tolerance_scale: float = 1.0
    inference: bool = False

    def merged(self, overrides: dict[str, object]) -> CompileSettings:
        """A copy with ``overrides`` applied (keys as in the header comment)."""
        changes: dict[str, Any] = {}  # each value checked for its field's type below
        tables = {"inductor.": dict(self.inductor_config), "dynamo.": dict(self.dynamo_config)}
        for key, value in overrides.items():
            prefix = next((p for p in _PREFIXES if key.startswith(p)), None)
            if prefix is not None and key != prefix:
                tables[prefix][key.removeprefix(prefix)] = value
            elif key in ("backend", "mode"):
                changes[key] = str(value)
            elif key in _BOOLEAN_KEYS:
                changes[key] = value if isinstance(value, bool) or (
                    value is None and key == "dynamic") else _to_bool(str(value), key)
            elif key == "tolerance-scale":
                changes["tolerance_scale"] = _to_float(value, key)
            else:
                raise TargetError(f"unknown setting {key!r} (known: {', '.join(KNOWN_KEYS)}, "
                                  "inductor.<option>, dynamo.<option>)")
        return replace(self, **changes,
                       inductor_config=tuple(sorted(tables["inductor."].items())),
                       dynamo_config=tuple(sorted(tables["dynamo."].items())))

    def describe(self) -> str:
        """One line for report headers: backend and every non-default switch."""
        parts = [f"backend={self.backend}"]
        parts += [f"{name}={value}" for name, value in (("mode", self.mode),
                  ("dynamic", self.dynamic)) if value is not None]
        parts += ["fullgraph=true"] if self.fullgraph else []
        parts += ["inference=true"] if self.inference else []
        parts += [f"inductor.{k}={v}" for k, v in self.inductor_config]
        parts += [f"dynamo.{k}={v}" for k, v in self.dynamo_config]
        return " ".join(parts)


@dataclass(frozen=True)
class Target:
    """One callable to validate, and where its code lives."""

    name: str                     # shown in reports: "mlp.py::Mlp"
    attribute: str                # class or function name, or factory "pkg.mod:make"
    form: TargetForm
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


def parse_settings(pairs: list[str]) -> dict[str, object]:
    """``["backend=inductor", "inductor.max_autotune=true"]`` to a dict."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TargetError(f"expected key=value, got {pair!r}")
        settings[key.strip()] = parse_value(value.strip())
    return settings


def _to_bool(text: str, key: str) -> bool:
    value = parse_value(text)
    if not isinstance(value, bool):
        raise TargetError(f"{key} must be true or false, got {text!r}")
    return value


def _to_float(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TargetError(f"{key} must be a positive number, got {value!r}")
    return float(value)
