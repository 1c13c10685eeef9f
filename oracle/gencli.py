"""``eqrewrite gen``: write generated programs to a folder, or report what a batch covers.

Registered through the plugin registry (``plugin.py``); this module stays cheap to import
(torch loads only when the command runs, through ``eqrewrite.oracle.generate``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # imports torch
    from .generate import BatchStats, GenConfig


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        raise click.BadParameter(f"expected LOW:HIGH, got {text!r}") from None
    if not 0 < bounds[0] <= bounds[1]:
        raise click.BadParameter(f"expected 0 < LOW <= HIGH, got {text!r}")
    return bounds


def _weights(pairs: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
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


@click.command("gen")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="First seed; programs are numbered by seed.")
@click.option("--count", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of programs (seeds SEED .. SEED+COUNT-1).")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for gen_<seed>.py files and manifest.json.")
@click.option("--stats", is_flag=True,
              help="Report validity rate, op coverage, features, dtypes, layouts.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True, help="Format of the --stats report.")
@click.option("--statements", default="5:12", show_default=True, metavar="LOW:HIGH",
              help="Statements per program.")
@click.option("--inputs", "input_count", default="1:3", show_default=True, metavar="LOW:HIGH",
              help="Tensor inputs per program.")
@click.option("--boundary", type=click.FloatRange(0, 1), default=0.35, show_default=True,
              help="Probability that an input holds boundary values.")
@click.option("--feature", "features", multiple=True, metavar="NAME=WEIGHT",
              help="Override a feature's weight (0 disables it); repeatable.")
@click.option("--ops", help="Comma-separated op ids: use only these ops of the table.")
@click.option("--strict", is_flag=True, help="Add strict=true to every program's header.")
@click.option("--generator-outputs", is_flag=True,
              help="Let programs return generators (a known Dynamo bug, #198190).")
@click.option("--compile-settings", type=click.Choice(["varied", "fixed"]), default="varied",
              show_default=True, help="varied: each seed's header says how it is compiled "
              "(dynamic shapes, no_grad, Inductor/Dynamo switches); fixed: no such settings "
              "(the programs of earlier releases).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes.")
def gen_command(seed: int, count: int, out: Path | None, stats: bool, output_format: str,
                statements: str, input_count: str, boundary: float, features: tuple[str, ...],
                ops: str | None, strict: bool, generator_outputs: bool, compile_settings: str,
                jobs: int) -> None:
    """Generate valid, self-contained PyTorch programs for compiler testing."""
    if out is None and not stats:
        raise click.UsageError("nothing to do: give -o/--out DIR and/or --stats")
    from .generate import BatchStats, GenConfig, Program, default_table, generate_many

    table = default_table()
    chosen = frozenset(o.strip() for o in ops.split(",")) if ops else None
    unknown = sorted((chosen or frozenset()) - set(table.by_id()))
    if unknown:
        raise click.UsageError(f"unknown op ids: {', '.join(unknown)}")
    try:
        config = GenConfig(statements=_range(statements), inputs=_range(input_count),
                           boundary=boundary, features=_weights(features), ops=chosen,
                           strict=strict, generator_outputs=generator_outputs,
                           compile_settings=compile_settings)
        config.weights()
    except (ValueError, click.BadParameter) as error:
        raise click.UsageError(str(error)) from None
    batch = BatchStats(table)
    programs = []
    for number, (program_seed, result) in enumerate(
            generate_many(range(seed, seed + count), config, jobs), 1):
        batch.add(program_seed, result, config.max_attempts)
        if isinstance(result, Program):
            programs.append(result.metadata())
            if out is not None:
                result.write(out)
        else:
            click.echo(f"error: {result}", err=True)
        if number % 50 == 0:
            click.echo(f"{number}/{count} programs", err=True)
    if out is not None:
        _write_manifest(out, config, programs, batch)
        click.echo(f"wrote {len(programs)} programs to {out}", err=True)
    if stats:
        text = (json.dumps(batch.to_dict(), indent=2) if output_format == "json"
                else batch.render())
        click.echo(text)
    sys.exit(1 if batch.failed else 0)


def _write_manifest(out: Path, config: GenConfig, programs: list[dict[str, Any]],
                    batch: BatchStats) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "config": {"statements": list(config.statements), "inputs": list(config.inputs),
                   "boundary": config.boundary, "features": dict(config.features),
                   "ops": sorted(config.ops) if config.ops else None,
                   "strict": config.strict, "generator_outputs": config.generator_outputs,
                   "compile_settings": config.compile_settings},
        "programs": programs,
        "stats": batch.to_dict(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
