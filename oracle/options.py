"""What the oracle's commands share on the command line: the parsers of option texts
(``LOW:HIGH``, ``NAME=WEIGHT``, ``START:STOP``, durations), the click options that
``eqrewrite gen`` and ``eqrewrite campaign`` both take, and ``usage_errors`` (the API's
``OracleError`` reported as click's usage error: exit 2). Cheap to import (click and
``api.py``); the commands turn texts into the typed arguments of ``api.py`` here."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from .api import OracleError

_Command = TypeVar("_Command", bound=Callable[..., Any])
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_range(text: str) -> tuple[int, int]:
    """``LOW:HIGH`` (or ``N``: ``N:N``), with ``0 < LOW <= HIGH``."""
    low, _, high = text.partition(":")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        raise click.BadParameter(f"expected LOW:HIGH, got {text!r}") from None
    if not 0 < bounds[0] <= bounds[1]:
        raise click.BadParameter(f"expected 0 < LOW <= HIGH, got {text!r}")
    return bounds


def parse_weights(pairs: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``NAME=WEIGHT`` texts as ``(name, weight)`` pairs."""
    weights = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            weights.append((name, float(value)))
        except ValueError:
            raise click.BadParameter(f"expected NAME=WEIGHT, got {pair!r}") from None
        if not sep:
            raise click.BadParameter(f"expected NAME=WEIGHT, got {pair!r}")
    return tuple(weights)


def parse_ops(text: str | None) -> tuple[str, ...] | None:
    """``--ops``: comma-separated op ids (None: every op of the table)."""
    return tuple(o.strip() for o in text.split(",")) if text else None


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``1.5h``, ``1d`` in seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise click.BadParameter(f"expected a duration such as 90s, 30m or 1h, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_seeds(text: str) -> range:
    """``START:STOP`` (STOP excluded) or one seed."""
    start, sep, stop = text.partition(":")
    try:
        seeds = range(int(start), int(stop) if sep else int(start) + 1)
    except ValueError:
        raise click.BadParameter(f"expected START:STOP, got {text!r}") from None
    if seeds.start < 0 or len(seeds) == 0:
        raise click.BadParameter(f"expected 0 <= START < STOP, got {text!r}")
    return seeds


def statements_option(command: _Command) -> _Command:
    """``--statements LOW:HIGH`` (``eqrewrite gen``, ``eqrewrite campaign``)."""
    return click.option("--statements", default="5:12", show_default=True, metavar="LOW:HIGH",
                        help="Statements per program.")(command)


def compile_settings_option(command: _Command) -> _Command:
    """``--compile-settings varied|fixed`` (``eqrewrite gen``, ``eqrewrite campaign``)."""
    return click.option(
        "--compile-settings", type=click.Choice(["varied", "fixed"]), default="varied",
        show_default=True, help="varied: each seed's header says how it is compiled "
        "(dynamic shapes, no_grad, Inductor/Dynamo switches); fixed: no such settings "
        "(the programs of earlier releases).")(command)


@contextmanager
def usage_errors() -> Iterator[None]:
    """The API's usage errors (``OracleError``) as click's: exit 2, the same message."""
    try:
        yield
    except OracleError as error:
        raise click.UsageError(str(error)) from None
