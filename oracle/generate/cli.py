"""``eqrewrite gen``: write generated programs to a folder, or report what a batch covers.

Registered through the plugin registry (``plugin.py``); a thin layer over ``api.generate``
(options in, one call, its report printed). This module stays cheap to import (torch loads
only when the command runs, through ``eqrewrite.oracle.generate``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..api import OracleError, generate
from ..options import (
    compile_settings_option,
    parse_ops,
    parse_range,
    parse_weights,
    statements_option,
)


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
@statements_option
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
@compile_settings_option
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes.")
def gen_command(seed: int, count: int, out: Path | None, stats: bool, output_format: str,
                statements: str, input_count: str, boundary: float, features: tuple[str, ...],
                ops: str | None, strict: bool, generator_outputs: bool, compile_settings: str,
                jobs: int) -> None:
    """Generate valid, self-contained PyTorch programs for compiler testing."""
    if out is None and not stats:
        raise click.UsageError("nothing to do: give -o/--out DIR and/or --stats")
    try:
        report = generate(count, start=seed, out=out, statements=parse_range(statements),
                          inputs=parse_range(input_count), boundary=boundary,
                          features=parse_weights(features), ops=parse_ops(ops), strict=strict,
                          generator_outputs=generator_outputs,
                          compile_settings=compile_settings, jobs=jobs,
                          say=lambda line: click.echo(line, err=True))
    except (OracleError, click.BadParameter) as error:
        raise click.UsageError(str(error)) from None
    if out is not None:
        click.echo(f"wrote {len(report.programs)} programs to {out}", err=True)
    if stats:
        text = (json.dumps(report.stats.to_dict(), indent=2) if output_format == "json"
                else report.stats.render())
        click.echo(text)
    sys.exit(report.status)
