"""The arguments of the API's commands checked before any file is read: the paths
(``given_paths``), the rule packs (``read_packs``), the scopes (``parse_scopes``), with
``OptionError`` (or ``RuleError`` for a pack that cannot be read) for one they cannot take:
what the commands exit 2 on. ``api.py`` builds on these (``RewriteSettings``); they import
nothing above the engine (``tests/test_repository.py``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from .analysis.facts.scopes import known_scopes
from .matching.rules import RuleError, RulePack, load_pack
from .syntax.enums import Scope

__all__ = ["OptionError", "PathArg", "did_you_mean", "given_paths", "parse_scopes",
           "read_packs"]

PathArg = str | os.PathLike[str]


class OptionError(ValueError):
    """An argument ``rewrite`` or ``audit`` cannot take: no paths, a path that does not
    exist, an unknown mode, scope or rule id, ``out`` with a report-only mode, ``black``
    without black installed. The message is what the command line prints after ``error:``."""


def given_paths(paths: PathArg | Iterable[PathArg]) -> tuple[Path, ...]:
    """The paths given, as ``Path``s; none, or one that does not exist, is an OptionError."""
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not given:
        raise OptionError("no paths given")
    found = tuple(Path(p) for p in given)
    for path in found:
        if not path.exists():
            raise OptionError(f"{path}: no such file or folder")
    return found


def read_packs(specs: list[str]) -> list[RulePack]:
    """The packs; one that cannot be read is a RuleError naming it."""
    try:
        return [load_pack(spec) for spec in specs]
    except OSError as error:
        raise RuleError(str(error.filename), 0, 0,
                        f"cannot read the rule pack: {error.strerror or error}") from None


def did_you_mean(name: str, known: set[str]) -> str:
    """`` (did you mean a, b?)`` for the known names closest to a misspelt one, or nothing."""
    matches = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean {', '.join(matches)}?)" if matches else ""


def parse_scopes(values: list[str], base: Path) -> tuple[frozenset[Scope] | None,
                                                      tuple[str, ...]]:
    """``--scope`` values as rule scopes plus profile files (``traced:FILE``, relative to
    ``base``)."""
    scopes: set[Scope] = set()
    profiles = []
    for value in values:
        if value.startswith("traced:"):
            profile = base / value.split(":", 1)[1]
            if not profile.is_file():
                raise OptionError(f"--scope {value}: no such file {str(profile)!r}")
            scopes.add(Scope.PROFILED)
            profiles.append(str(profile.resolve()))
        elif value in known_scopes():
            scopes.add(Scope(value))
        else:
            raise OptionError(f"unknown scope {value!r}; choose from "
                              f"{', '.join(sorted(known_scopes()))} or traced:FILE")
    return frozenset(scopes) or None, tuple(profiles)
