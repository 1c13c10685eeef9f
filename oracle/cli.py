"""``eqrewrite oracle`` and the ``--oracle`` step of a rewrite run: the command line over
``api.py`` (``validate_path``: what ``api.oracle`` runs; ``validate_rewritten``: what
``api.validated_rewrite`` runs after its rewrite), which does the work and returns the typed
``OracleReport`` that this module prints. The options are ``options.py``'s.

torch is imported only inside these functions (through the harness), so ``eqrewrite --help``
and plain rewrites stay fast. Every usage problem is an ``OracleError`` raised before any
worker starts, which the commands report as click's usage error (``options.usage_errors``):
exit 2 with its cause.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .api import OracleOptions, OracleReport, validate_path, validate_rewritten
from .options import compile_options, options_from, usage_errors

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.plugins import RewriteRun

    from .formats import OracleDocument


@click.command("oracle")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--rewritten", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A rewritten copy of PATH: validate the pair four ways.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of stdout.")
@compile_options
def oracle_command(path: Path, rewritten: Path | None, output_format: str,
                   output: Path | None, **kwargs: Any) -> None:
    """Validate targets under PATH: eager vs compiled, and vs a rewritten tree if given."""
    from eqrewrite.rewriter.api import ConfigError

    try:
        with usage_errors():
            options = options_from(output_format=output_format, output=output, **kwargs)
            report = validate_path(path, rewritten, options, progress=True)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    _print(report, options)
    sys.exit(report.status)


def validate_rewrite(run: RewriteRun, options: OracleOptions,
                     rollback: bool = False) -> tuple[int, OracleDocument]:
    """The rewrite command's ``--oracle`` step: validate ``run.paths[0]`` against the tree
    written to ``run.out_root`` (``api.validate_rewritten``, as ``api.validated_rewrite``
    does), reverting culprit edits with ``rollback``; print the report as ``options``
    ask. Returns the exit status (1 if some target failed) and the report as a JSON-ready
    document; with the output format ``embedded`` (the rewrite's own is JSON) the document
    is not printed (the caller embeds it) and the table goes to stderr."""
    root, out_root = run.paths[0], run.out_root
    assert out_root is not None  # the --oracle step always has the rewrite write a tree
    click.echo(f"validating {root} against the rewritten tree {out_root}", err=True)
    report = validate_rewritten(root, out_root, run.results, run.rules, run.options, options,
                                rollback, progress=True)
    return report.status, _print(report, options)


def _print(report: OracleReport, options: OracleOptions) -> OracleDocument:
    """Print ``report`` as ``options`` ask; return its JSON document."""
    if not report.targets:
        click.echo(f"no targets under {report.root}", err=True)
    record = report.to_json()
    if options.output_format == "json":
        text = json.dumps(record, indent=2)
    else:
        text = report.table(show_output=options.show_output)
    if options.output is not None:
        options.output.write_text(text + "\n", encoding="utf-8")
        click.echo(f"report written to {options.output}", err=True)
    elif options.output_format != "embedded":
        click.echo(text)
    else:  # inside the rewrite command's JSON document: people read the table on stderr
        click.echo(report.table(), err=True)
    return record
