"""``[tool.eqrewrite.audit]``: the audit's settings in the project's ``pyproject.toml``.

Validated like ``[tool.eqrewrite]``: unknown keys, wrong types, unknown scopes and unknown
pattern ids are errors that name the file and the key (with close matches). Paths
(``baseline``, pack files) are relative to ``pyproject.toml``. Command-line options win.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.facts.scopes import known_scopes
from ..workspace.config import Config, ConfigError
from .catalogue import PATTERNS

_LISTS = ("scope", "ignore", "rules", "exclude")
_BOOLS = ("assume-tensor-params",)
_STRINGS = ("baseline",)


@dataclass
class AuditConfig:
    """The audit table, with defaults for what it does not set."""

    scope: list[str] = field(default_factory=lambda: ["forward", "compiled"])
    ignore: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=lambda: ["graphbreaks"])
    exclude: list[str] = field(default_factory=list)
    assume_tensor_params: bool | None = None  # None: as [tool.eqrewrite] says
    baseline: Path | None = None
    given: frozenset[str] = frozenset()


def audit_config(config: Config) -> AuditConfig:
    """Read and check ``config.audit`` (the raw table)."""
    table, where = config.audit, f"{config.path}: [tool.eqrewrite.audit]"
    result = AuditConfig(given=frozenset(table))
    root = config.path.parent if config.path is not None else Path.cwd()
    for key, value in table.items():
        if key in _LISTS:
            value = [value] if isinstance(value, str) else value
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ConfigError(f"{where} {key} must be a list of strings")
        elif key in _BOOLS and not isinstance(value, bool):
            raise ConfigError(f"{where} {key} must be true or false")
        elif key in _STRINGS and not isinstance(value, str):
            raise ConfigError(f"{where} {key} must be a path (a string)")
        elif key not in _LISTS + _BOOLS + _STRINGS:
            raise ConfigError(f"{where}: unknown key {key!r}"
                              f"{did_you_mean(key, _LISTS + _BOOLS + _STRINGS)} (known: "
                              f"{', '.join(sorted(_LISTS + _BOOLS + _STRINGS))})")
        setattr(result, key.replace("-", "_"), value)
    check_scopes(result.scope, where + " scope")
    check_patterns(result.ignore, where + " ignore")
    if result.baseline is not None:
        result.baseline = root / result.baseline
    result.rules = [str(root / r) if (root / r).is_file() else r for r in result.rules]
    return result


def check_scopes(scopes: list[str], where: str) -> None:
    for scope in scopes:
        if scope not in known_scopes():
            raise ConfigError(f"{where}: unknown scope {scope!r} (known: "
                              f"{', '.join(sorted(known_scopes()))})")


def check_patterns(ids: list[str], where: str) -> None:
    for pattern in ids:
        if pattern not in PATTERNS:
            raise ConfigError(f"{where}: no audit pattern {pattern!r}"
                              f"{did_you_mean(pattern, tuple(PATTERNS))} (see 'eqrewrite "
                              "audit --list-patterns')")


def did_you_mean(name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""
