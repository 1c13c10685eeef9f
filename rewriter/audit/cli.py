"""``eqrewrite audit``: where code fragments torch.compile graphs, why, and what fixes it.

A thin layer over ``api.audit``: the options become its arguments, its ``AuditReport`` is
rendered in the formats asked for, the plugin steps and the baseline are applied.

The static audit (this module and its package) never imports torch: fast enough for a
pre-commit hook. Installed plugins add the dynamic audit (``--run``, ``--what-if``,
``--bench``: the oracle) through ``Registry.add_audit_options``/``add_audit_step``; their
record becomes the report's ``dynamic`` section. ``--dynamo-config``/``--dynamic-sizes``
(read as ``eqrewrite run`` reads them) reach ``api.audit`` and, through ``AuditRun``, the
dynamic audit, which measures every target with and without them. Exit codes: 0 no
findings (or ``--exit-zero``), 1 findings (with ``--baseline``: new findings) or a failed
dynamic step, 2 usage or configuration error, 123 some file could not be audited.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from ..options import (
    assumption_options,
    cache_options,
    dynamo_options,
    exclude_option,
    ignore_option,
    jobs_option,
    quiet_option,
    rules_option,
)
from ..plugins import (
    AuditRun,
    AuditStep,
    Flags,
    Registry,
)
from .catalogue import PATTERNS
from .formats import FORMATS

if TYPE_CHECKING:  # imported when the command runs: ``eqrewrite --help`` stays quick
    from ..api import AuditReport

EXIT_FINDINGS, EXIT_USAGE, EXIT_FILE_ERROR = 1, 2, 123


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _list_patterns(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for pattern in PATTERNS.values():
        settings = ", ".join(s.name for s in pattern.settings) or "-"
        click.echo(f"{pattern.id:22} {', '.join(pattern.gb_ids):24} settings: {settings}")
        click.echo(f"{'':22} {pattern.title}")
    ctx.exit(0)


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@rules_option("Rule packs whose rules may fix the findings (default: graphbreaks); with "
              "--run also measure the breaks before and after rewriting. Repeatable.")
@click.option("--scope", "scopes", multiple=True,
              type=click.Choice(["everywhere", "forward", "compiled", "traced"]),
              help="Where to look (default: forward of nn.Modules and compiled functions; "
                   "traced: also every function they call, across the audited files); "
                   "also restricts the rules, as for rewriting. Repeatable.")
@assumption_options(
    "Treat unannotated forward() parameters as tensors (as the rewriter).",
    "Take int/float/bool/complex parameter annotations as proof of a Python number, as "
    "rewriting does (default: the configuration's, else trust).")
@ignore_option("PATTERN", "Do not report this pattern id (see --list-patterns). Repeatable.")
@exclude_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default=None,
              help="Report format (default: from the -o file's suffix, else text).")
@click.option("-o", "--output", "outputs", multiple=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of stdout; repeatable, each in the "
                   "format its suffix names (.txt .md .json .sarif .html).")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="A previous JSON report: report only findings it does not have, exit 1 "
                   "if there are any.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@jobs_option("Worker processes (default: cores, as for rewriting).")
@cache_options("Where to keep the cache (default: .eqrewrite_cache in the project, as for "
               "rewriting).")
@quiet_option("No progress or summary on stderr.")
@dynamo_options(
    "With --run: also measure every target with this torch._dynamo.config switch set (e.g. "
    "capture_scalar_outputs=true), and say which breaks the switches remove. Repeatable.",
    "With --run: the switches of 'eqrewrite run --dynamic-sizes' (capture_scalar_outputs=true, "
    "capture_dynamic_output_shape_ops=true; a --dynamo-config value for either wins).")
@click.option("--list-patterns", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_patterns, help="List the break patterns and exit.")
def audit_command(paths: tuple[Path, ...], rule_specs: tuple[str, ...], scopes: tuple[str, ...],
                  assume_tensor_params: bool | None, trust_scalar_annotations: bool | None,
                  ignored: tuple[str, ...], excludes: tuple[str, ...], output_format: str | None,
                  outputs: tuple[Path, ...], baseline: Path | None, exit_zero: bool,
                  jobs: int | None, no_cache: bool, cache_dir: Path | None, quiet: bool,
                  dynamo: tuple[str, ...], dynamic_sizes: bool, **plugin_flags: object) -> None:
    """Report where the code under PATHS breaks torch.compile graphs, why, and what fixes
    each break: a rule, a Dynamo setting, or a human."""
    from .. import api

    if not paths:
        _fail("no paths given; try 'eqrewrite audit src/'")
    flags = Flags(plugin_flags)
    targets = _targets(outputs, output_format)
    switches = _switches(dynamo, dynamic_sizes, flags)
    registry = click.get_current_context().find_object(Registry)
    steps = registry.audit_steps if registry is not None else []
    for step in steps:
        step.prepare(flags)
    try:
        report = api.audit(paths, rules=rule_specs, scope=scopes,
                           assume_tensor_params=assume_tensor_params,
                           trust_scalar_annotations=trust_scalar_annotations, ignore=ignored,
                           exclude=excludes, jobs=jobs, cache=not no_cache,
                           cache_dir=cache_dir, dynamo_config=switches)
    except api.USAGE_ERRORS as error:
        _fail(str(error))
    status = _dynamic(steps, flags, report, AuditRun(
        paths, report.root, list(report.files), list(report.packs), bool(rule_specs),
        report.options, report.document, targets[0][1] if len(targets) == 1 else "json",
        progress=not quiet and (bool(outputs) or targets[0][1] == "text"),
        dynamo_config=report.dynamo_config))
    baseline = baseline or report.configured_baseline
    # Writing the report over the baseline regenerates it: compare with nothing then.
    if baseline is not None and not any(_same(path, baseline) for path, _ in targets if path):
        try:
            report.compare_to(baseline)
        except api.BaselineError as error:
            _fail(str(error))
    for path, chosen in targets:
        _emit(report, chosen, path, quiet)
    sys.exit(EXIT_FILE_ERROR if report.errors else 0 if exit_zero else
             report.status or (EXIT_FINDINGS if status else 0))


def _switches(dynamo: tuple[str, ...], dynamic_sizes: bool, flags: Flags) -> dict[str, object]:
    """``--dynamo-config``/``--dynamic-sizes`` read as ``eqrewrite run`` reads them; they
    act only on the targets ``--run`` measures (the oracle's option, absent without it)."""
    from ..api import SwitchError, parse_switches

    try:
        switches = parse_switches(dynamo, dynamic_sizes)
    except SwitchError as error:
        _fail(str(error))
    if switches and not flags.flag("run"):
        _fail("--dynamo-config and --dynamic-sizes need --run (the targets are measured "
              "with and without them)")
    return switches


_SUFFIXES = {".txt": "text", ".md": "md", ".json": "json", ".sarif": "sarif", ".html": "html",
             ".htm": "html"}


def _targets(outputs: tuple[Path, ...], output_format: str | None
             ) -> list[tuple[Path | None, str]]:
    """(file or None for stdout, format) for every report to write."""
    if not outputs:
        return [(None, output_format or "text")]
    if output_format is not None:
        if len(outputs) > 1:
            _fail("--format names one format; with several -o files, each file's suffix "
                  "names its format")
        return [(outputs[0], output_format)]
    found: list[tuple[Path | None, str]] = []
    for path in outputs:
        if path.suffix.lower() not in _SUFFIXES:
            _fail(f"-o {path}: cannot tell the format from the suffix (use "
                  f"{', '.join(sorted(_SUFFIXES))}, or --format)")
        found.append((path, _SUFFIXES[path.suffix.lower()]))
    return found


def _same(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()


def _dynamic(steps: list[AuditStep], flags: Flags, report: AuditReport, run: AuditRun) -> int:
    """Run the audit steps (the dynamic audit): the worst status; each record joins the
    report."""
    status = 0
    for step in steps:
        outcome = step.finish(flags, run)
        if outcome is None:
            continue
        status = status or outcome.status
        if outcome.record is not None:
            report.add_dynamic(outcome.record)
    return status


def _emit(report: AuditReport, output_format: str, output: Path | None,
          quiet: bool) -> None:
    text = report.render(output_format, color=output is None and sys.stdout.isatty())
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from ..workspace.files import write_atomic

    write_atomic(output, text.encode("utf-8"))  # a report is a user file too: never half written
    if not quiet:
        summary = report.summary
        click.echo(f"{summary['findings']} findings in {summary['files_with_findings']} files; "
                   f"report written to {output}", err=True)
