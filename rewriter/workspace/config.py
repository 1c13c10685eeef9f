"""``[tool.eqrewrite]`` in the target project's ``pyproject.toml``.

Found like black and ruff find theirs: from the common folder of the given
paths upwards. Command-line options override it. Unknown keys are errors, so a
misspelt setting never silently does nothing.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_INCLUDE = ["*.py"]

# A value as TOML holds it (what tomllib gives), and a table of them: what a table of
# [tool.eqrewrite] that another part checks (the oracle's) holds until it is checked.
TomlValue: TypeAlias = (str | int | float | bool | datetime.datetime | datetime.date
                        | datetime.time | list["TomlValue"] | dict[str, "TomlValue"])
TomlTable: TypeAlias = dict[str, TomlValue]


class ConfigError(Exception):
    """A bad ``pyproject.toml``; the message names the file."""


@dataclass
class Config:
    """Settings from ``[tool.eqrewrite]``, with defaults for anything not given."""

    rules: list[str] = field(default_factory=lambda: ["default"])
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    scope: list[str] | None = None
    unsafe: bool = False
    assume_tensor_params: bool = False
    trust_scalar_annotations: bool = True
    path: Path | None = None
    # [tool.eqrewrite.oracle], checked by the oracle (its api.configured)
    oracle: TomlTable = field(default_factory=dict)
    # [tool.eqrewrite.audit], checked by audit/config.py
    audit: dict[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()  # the keys the file sets (the rest are defaults)


_LISTS = {"rules", "include", "exclude", "extend-exclude", "ignore", "scope"}
_BOOLS = {"unsafe", "assume-tensor-params", "trust-scalar-annotations"}
_TABLES = {"oracle", "audit"}


def find_project_root(paths: list[Path]) -> Path:
    """The nearest folder above all ``paths`` holding pyproject.toml or .git."""
    resolved = [Path(os.path.abspath(p)) for p in paths] or [Path.cwd()]
    common = Path(*Path(resolved[0]).parts)
    for path in resolved[1:]:
        while common not in (path, *path.parents):
            common = common.parent
    if common.is_file():
        common = common.parent
    for folder in [common, *common.parents]:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return common


def load_config(root: Path) -> Config:
    """Read ``[tool.eqrewrite]`` from ``root/pyproject.toml`` (defaults if absent)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    table = data.get("tool", {}).get("eqrewrite")
    if table is None:
        return Config()
    config = Config(path=path, given=frozenset(table))
    for key, value in table.items():
        if key in _LISTS:
            if isinstance(value, str):
                value = [value]
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ConfigError(f"{path}: [tool.eqrewrite] {key} must be a list of strings")
        elif key in _BOOLS:
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: [tool.eqrewrite] {key} must be true or false")
        elif key in _TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [tool.eqrewrite.{key}] must be a table")
        else:
            known = ", ".join(sorted(_LISTS | _BOOLS | _TABLES))
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.eqrewrite] "
                              f"(known: {known})")
        setattr(config, key.replace("-", "_"), value)
    if config.rules:
        # Pack paths in pyproject.toml are relative to it, not to the current folder.
        config.rules = [str(root / r) if (root / r).is_file() else r for r in config.rules]
    return config
