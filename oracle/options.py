"""What the oracle's commands share on the command line: the parsers of option texts
(``LOW:HIGH``, ``NAME=WEIGHT``, ``START:STOP``, durations), the click options that
``eqrewrite gen`` and ``eqrewrite campaign`` both take (and the config switches and
``--strict`` that the campaign shares with the oracle), the compile and comparison options
of ``eqrewrite oracle`` and of the rewrite command's ``--oracle`` (``compile_options``)
turned into the API's ``OracleOptions`` (``options_from``; ``options_from_flags`` from the
rewrite command's ``Flags``), and ``usage_errors`` (the API's ``OracleError`` reported as
click's usage error: exit 2). Cheap to import (click and ``api.py``); the commands turn
texts into the typed arguments of ``api.py`` here."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .api import DEFAULT_PARALLEL, OracleError, OracleOptions, compile_settings

if TYPE_CHECKING:
    from eqrewrite.rewriter.plugins import Flags

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


def switch_options(command: _Command) -> _Command:
    """``--inductor-config`` and ``--dynamo-config`` (``KEY=VALUE``, repeatable, as
    ``inductor`` and ``dynamo``: ``compile_settings`` reads them): the oracle's commands
    and ``eqrewrite campaign``."""
    command = click.option("--dynamo-config", "dynamo", multiple=True, metavar="KEY=VALUE",
                           help="torch._dynamo.config switch (e.g. "
                           "capture_scalar_outputs=true); repeatable.")(command)
    return click.option("--inductor-config", "inductor", multiple=True, metavar="KEY=VALUE",
                        help="torch._inductor.config switch; repeatable.")(command)


def strict_option(command: _Command) -> _Command:
    """``--strict``: compare signs of zero and NaN too (the oracle's, ``eqrewrite
    campaign``)."""
    return click.option("--strict", is_flag=True,
                        help="Also compare signs of zero and NaN.")(command)


def compile_options(command: _Command) -> _Command:
    """Decorate a click command with the oracle's compile and comparison options."""
    options = [
        click.option("--backend", help="inductor (default, as torch.compile), aot_eager or "
                     "eager (Dynamo only: graph breaks, no code generation), or module:function."),
        click.option("--mode", help="torch.compile mode, e.g. max-autotune."),
        click.option("--dynamic/--no-dynamic", default=None, help="torch.compile dynamic."),
        click.option("--fullgraph", is_flag=True, default=None, help="torch.compile fullgraph."),
        switch_options,
        click.option("--timeout", type=float, default=300.0, show_default=True,
                     help="Seconds per run before a target counts as hung."),
        click.option("--memory-limit", "memory_gb", type=float, default=16.0, show_default=True,
                     help="GiB of address space per worker; beyond it a target counts as OOM."),
        strict_option,
        click.option("--tolerance-scale", type=float, default=1.0, show_default=True,
                     help="Multiply every rtol/atol."),
        click.option("--reproducers", type=click.Path(file_okay=False, path_type=Path),
                     help="Folder for reproducers of compiler-bug and compile-error verdicts "
                     "(default: beside --output, else a new temporary folder)."),
        click.option("--no-breaks", is_flag=True, help="Skip graph-break counting."),
        click.option("--separate-break-count", is_flag=True,
                     help="Count graph breaks apart from the runs (explain and a fullgraph "
                     "compile with Dynamo only); slower, also says whether fullgraph=True "
                     "compiles."),
        click.option("--parallel", type=click.IntRange(min=1), default=DEFAULT_PARALLEL,
                     show_default=True,
                     help="Targets validated at once, each with its own worker process."),
        click.option("--show-output", is_flag=True,
                     help="Print what targets printed and what the compiler logged."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def options_from(backend: str | None, mode: str | None, dynamic: bool | None,
                 fullgraph: bool | None, inductor: Iterable[str], dynamo: Iterable[str],
                 timeout: float, memory_gb: float, strict: bool, tolerance_scale: float,
                 reproducers: Path | None, no_breaks: bool, separate_break_count: bool,
                 parallel: int, show_output: bool, output_format: str = "text",
                 output: Path | None = None) -> OracleOptions:
    """Collect the decorated options into OracleOptions (usage errors exit 2)."""
    settings = compile_settings(backend, mode, dynamic, fullgraph, inductor, dynamo)
    if reproducers is None and output is not None:
        reproducers = output.parent / f"{output.stem}-reproducers"
    return OracleOptions(settings, timeout, memory_gb, strict, tolerance_scale, reproducers,
                         not no_breaks, separate_break_count, parallel,
                         output_format, output, show_output)


def options_from_flags(flags: Flags, output_format: str = "text") -> OracleOptions:
    """``compile_options`` as the rewrite command hands them to its ``--oracle`` step."""
    return options_from(
        flags.text("backend"), flags.text("mode"), flags.switch("dynamic"),
        flags.switch("fullgraph"), flags.texts("inductor"), flags.texts("dynamo"),
        flags.number("timeout", 300.0), flags.number("memory_gb", 16.0), flags.flag("strict"),
        flags.number("tolerance_scale", 1.0), flags.path("reproducers"),
        flags.flag("no_breaks"), flags.flag("separate_break_count"),
        flags.integer("parallel", DEFAULT_PARALLEL), flags.flag("show_output"), output_format)


@contextmanager
def usage_errors() -> Iterator[None]:
    """The API's usage errors (``OracleError``) as click's: exit 2, the same message."""
    try:
        yield
    except OracleError as error:
        raise click.UsageError(str(error)) from None
