"""``eqrewrite oracle`` and the ``--oracle`` step of a rewrite run: the command line over
``api.py`` (``validate_path``, ``validate_trees``), which does the work and returns the typed
``OracleReport`` that this module prints.

torch is imported only inside these functions (through the harness), so ``eqrewrite --help``
and plain rewrites stay fast. Every usage problem is an ``OracleError`` raised before any
worker starts, which the commands report as click's usage error (``options.usage_errors``):
exit 2 with its cause.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .api import (
    DEFAULT_PARALLEL,
    Changed,
    OracleOptions,
    OracleReport,
    compile_settings,
    make_rollback,
    validate_path,
    validate_trees,
)
from .options import usage_errors

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.plugins import RewriteRun

    from .formats import OracleDocument
    from .harness.harness import Revalidate

_Command = TypeVar("_Command", bound=Callable[..., Any])


def compile_options(command: _Command) -> _Command:
    """Decorate a click command with the oracle's compile and comparison options."""
    options = [
        click.option("--backend", help="inductor (default, as torch.compile), aot_eager or "
                     "eager (Dynamo only: graph breaks, no code generation), or module:function."),
        click.option("--mode", help="torch.compile mode, e.g. max-autotune."),
        click.option("--dynamic/--no-dynamic", default=None, help="torch.compile dynamic."),
        click.option("--fullgraph", is_flag=True, default=None, help="torch.compile fullgraph."),
        click.option("--inductor-config", "inductor", multiple=True, metavar="KEY=VALUE",
                     help="torch._inductor.config switch; repeatable."),
        click.option("--dynamo-config", "dynamo", multiple=True, metavar="KEY=VALUE",
                     help="torch._dynamo.config switch (e.g. capture_scalar_outputs=true); "
                     "repeatable."),
        click.option("--timeout", type=float, default=300.0, show_default=True,
                     help="Seconds per run before a target counts as hung."),
        click.option("--memory-limit", "memory_gb", type=float, default=16.0, show_default=True,
                     help="GiB of address space per worker; beyond it a target counts as OOM."),
        click.option("--strict", is_flag=True, help="Also compare signs of zero and NaN."),
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


def validate_rewrite(run: RewriteRun, rollback: bool,
                     flags: dict[str, Any]) -> tuple[int, OracleDocument]:
    """The rewrite command's ``--oracle`` step: validate ``run.paths[0]`` against the tree
    written to ``run.out_root`` (``run`` is the rewriter's ``RewriteRun``). With a machine
    format the report is returned for the rewrite's JSON document instead of printed."""
    from eqrewrite.rewriter.api import Status, discover_files, find_project_root, load_config

    root, out_root = run.paths[0], run.out_root
    assert out_root is not None  # the --oracle step always has the rewrite write a tree
    click.echo(f"validating {root} against the rewritten tree {out_root}", err=True)
    changed: Changed = {Path(r.path).resolve().relative_to(root.resolve()).as_posix(): r.edits
                        for r in run.results if r.status is Status.CHANGED}
    undo = make_rollback(root, out_root, changed, run.rules, run.options) if rollback else None
    config = load_config(find_project_root([root])).oracle
    files = list(discover_files([root], ["*.py"], [], root))
    embedded = "embedded" if run.output_format != "text" else "text"
    return validate(root, out_root, files, changed,
                    options_from(output_format=embedded, **flags), config, undo)


def validate(root: Path, rewritten: Path | None, files: list[Path],
             changed: Changed, options: OracleOptions, config: dict[str, Any],
             rollback: Revalidate | None = None,
             explicit: Path | None = None) -> tuple[int, OracleDocument]:
    """Validate every target (``api.validate_trees``); print the report; return the exit
    code (1 if any fails) and the report as a JSON-ready document. With the output format
    ``embedded`` the document is not printed (the caller embeds it) and the table goes to
    stderr."""
    report = validate_trees(root, rewritten, files, changed, options, config, rollback,
                            explicit, progress=True)
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
