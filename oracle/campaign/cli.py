"""``eqrewrite campaign``: generate, rewrite and validate many programs; keep what matters.

Registered through the plugin registry (``oracle/plugin.py``); a thin layer over
``api.campaign`` (options in, one call, its summary printed). Importing this module is
cheap (torch and the executors load when the command runs). Running the same command again
on the same folder resumes it: finished seeds are skipped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..api import OracleError, campaign
from ..api import compile_settings as settings_of
from ..options import (
    compile_settings_option,
    parse_duration,
    parse_ops,
    parse_range,
    parse_seeds,
    parse_weights,
    statements_option,
    strict_option,
    switch_options,
)

if TYPE_CHECKING:
    from ..formats import CampaignSummary


@click.command("campaign")
@click.option("--seeds", default="0:100", show_default=True, metavar="START:STOP",
              help="Seeds to run (STOP excluded); one program per seed.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=min(2, os.cpu_count() or 1),
              show_default=True, help="Programs validated at once (one process each).")
@click.option("--time-budget", "budget", metavar="DURATION",
              help="Stop submitting seeds after this long (90s, 30m, 1h); seeds in flight "
              "finish.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Campaign folder (journal, summary.json, findings/); run again to resume.")
@click.option("--backend", default="inductor", show_default=True,
              help="inductor, aot_eager, eager, or module:function (a custom backend).")
@switch_options
@click.option("--known-issues", metavar="FILE",
              help="YAML of known issues to count but not report (default: the shipped "
              "list; 'none' for none).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="Where seeds run.")
@click.option("--address", help="Ray cluster address (auto, ray://host:10001); default: a "
              "new local Ray instance.")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="Seconds per run before a program counts as hung.")
@strict_option
@click.option("--unsafe", is_flag=True, help="Also apply the pack's unsafe rules.")
@click.option("--rules", "packs", multiple=True, default=("equivalences",), show_default=True,
              help="Rule pack(s) rewriting each program.")
@statements_option
@click.option("--ops", help="Comma-separated op ids: generate with only these ops.")
@click.option("--feature", "features", multiple=True, metavar="NAME=WEIGHT",
              help="Override a generator feature's weight; repeatable.")
@compile_settings_option
@click.option("--reduce", "reduce_findings", is_flag=True,
              help="Run `eqrewrite reduce` on each new compiler-bug or compile-error finding "
              "(when installed).")
@click.option("--reduce-budget", "reduce_budget", default="10m", show_default=True,
              metavar="DURATION", help="Time for each --reduce (start-up and final check "
              "included); never more than what is left of --time-budget.")
@click.option("--progress/--no-progress", default=None,
              help="Live progress on stderr (default: when stderr is a terminal).")
def campaign_command(seeds: str, jobs: int, budget: str | None, out: Path, backend: str,
                     inductor: tuple[str, ...], dynamo: tuple[str, ...],
                     known_issues: str | None, executor: str, address: str | None,
                     timeout: float, strict: bool, unsafe: bool, packs: tuple[str, ...],
                     statements: str, ops: str | None, features: tuple[str, ...],
                     compile_settings: str, reduce_findings: bool, reduce_budget: str,
                     progress: bool | None) -> None:
    """Generate programs, rewrite them with the equivalence pack, validate each four ways,
    and keep one folder per unique finding. Exit 1 when there are new findings."""
    try:
        report = campaign(
            out, parse_seeds(seeds), jobs=jobs,
            time_budget=parse_duration(budget) if budget else None,
            settings=settings_of(backend, inductor=inductor, dynamo=dynamo),
            known_issues=(False if known_issues == "none" else known_issues or True),
            executor=executor, address=address, timeout=timeout, strict=strict,
            unsafe=unsafe, rules=packs, statements=parse_range(statements), ops=parse_ops(ops),
            features=parse_weights(features), compile_settings=compile_settings,
            reduce=reduce_findings, reduce_budget=parse_duration(reduce_budget),
            progress=progress)
    except (OracleError, click.BadParameter) as error:
        raise click.UsageError(str(error)) from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished seeds are in {out / 'journal.jsonl'}; run the same "
                   "command again to resume", err=True)
        sys.exit(130)
    _report(report.summary, out)
    sys.exit(report.status)


def _report(summary: CampaignSummary, out: Path) -> None:
    """The outcome in a few lines on stderr (the JSON summary has everything)."""
    seeds = summary["seeds"]
    classes = ", ".join(f"{outcome_class} {count}"
                        for outcome_class, count in summary["classes"].items())
    click.echo(f"campaign: {seeds['finished']} programs ({seeds['this_run']} this run, "
               f"{summary['programs_per_minute']:.1f}/min; stopped: {summary['stopped_by']}): "
               f"{classes}", err=True)
    for finding in summary["findings"]:
        click.echo(f"  {finding['class']:<26} {finding['folder']}  seeds "
                   f"{','.join(map(str, finding['seeds'][:5]))}  ops "
                   f"{','.join(finding['ops'][:6])}", err=True)
    known = sum(entry["seeds"] for entry in summary["known"])
    if known:
        click.echo(f"  ({known} results matched known issues)", err=True)
    click.echo(f"summary written to {out / 'summary.json'}", err=True)
