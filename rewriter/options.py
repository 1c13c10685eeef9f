"""The click options that ``eqrewrite PATH``, ``eqrewrite audit``, ``eqrewrite run`` and
``eqrewrite rules`` share (``--rules``, ``--ignore``, ``--exclude``, the assumptions,
``--jobs``, the cache, ``--quiet``, the Dynamo switches), defined once: each command gives
its own help text where the option means something of its own there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

_Command = TypeVar("_Command", bound=Callable[..., Any])


def rules_option(help: str) -> Callable[[_Command], _Command]:
    """``-r/--rules PACK`` (repeatable), as ``rule_specs``: rule pack files or packaged names."""
    return click.option("-r", "--rules", "rule_specs", multiple=True, metavar="PACK", help=help)


def ignore_option(metavar: str = "RULE_ID", help: str = "Disable a rule by id. Repeatable."
                  ) -> Callable[[_Command], _Command]:
    """``--ignore`` (repeatable), as ``ignored``: rule ids (the audit's: pattern ids)."""
    return click.option("--ignore", "ignored", multiple=True, metavar=metavar, help=help)


def exclude_option(command: _Command) -> _Command:
    """``--exclude GLOB`` (repeatable), as ``excludes``."""
    return click.option("--exclude", "excludes", multiple=True, metavar="GLOB",
                        help="Skip paths matching this gitignore-style glob. "
                             "Repeatable.")(command)


def assumption_options(assume_help: str, trust_help: str) -> Callable[[_Command], _Command]:
    """``--assume-tensor-params`` and ``--trust-scalar-annotations/--no-...``: None when not
    given (the configuration decides)."""
    def decorate(command: _Command) -> _Command:
        command = click.option("--trust-scalar-annotations/--no-trust-scalar-annotations",
                               default=None, help=trust_help)(command)
        return click.option("--assume-tensor-params", is_flag=True, default=None,
                            help=assume_help)(command)
    return decorate


def jobs_option(help: str) -> Callable[[_Command], _Command]:
    """``-j/--jobs N`` (at least 1; None: as many as cores)."""
    return click.option("-j", "--jobs", type=click.IntRange(min=1), help=help)


def cache_options(cache_dir_help: str) -> Callable[[_Command], _Command]:
    """``--no-cache`` and ``--cache-dir FOLDER``."""
    def decorate(command: _Command) -> _Command:
        command = click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
                               help=cache_dir_help)(command)
        return click.option("--no-cache", is_flag=True,
                            help="Neither read nor write the cache.")(command)
    return decorate


def quiet_option(help: str) -> Callable[[_Command], _Command]:
    """``-q/--quiet``."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


def dynamo_options(dynamo_help: str, sizes_help: str) -> Callable[[_Command], _Command]:
    """``--dynamo-config KEY=VALUE`` (repeatable, as ``dynamo``) and ``--dynamic-sizes``:
    Dynamo switches, read with ``api.parse_switches``."""
    def decorate(command: _Command) -> _Command:
        command = click.option("--dynamic-sizes", is_flag=True, help=sizes_help)(command)
        return click.option("--dynamo-config", "dynamo", multiple=True, metavar="KEY=VALUE",
                            help=dynamo_help)(command)
    return decorate
