"""``eqrewrite report FINDING``: issue-ready Markdown for a finding.

Registered through the plugin registry (``plugin.py``); a thin layer over ``api.report``
(options in, one call, its Markdown written). Cheap to import (torch runs only in the
report's child processes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
from eqrewrite.rewriter.api import write_atomic

from ..api import OracleError, report


@click.command("report")
@click.argument("finding", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the Markdown to FILE (default: stdout).")
@click.option("--no-ablation", is_flag=True,
              help="Do not run the script under other backends and modes.")
@click.option("--no-bisect", is_flag=True,
              help="Do not run torch._inductor.compiler_bisector.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds for each run of the script.")
@click.option("--bisect-budget", type=click.FloatRange(min=1), default=900.0,
              show_default=True, help="Seconds for the whole bisection.")
@click.option("--known-issues", "known_issues", default=None, metavar="FILE|none",
              help="Known-issues file to match (default: the shipped one).")
@click.option("--search-upstream", is_flag=True,
              help="Also ask GitHub's issue search (pytorch/pytorch) for near matches "
                   "($GITHUB_TOKEN if set; $EQREWRITE_GITHUB_API for another address).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def report_command(finding: Path, out: Path | None, no_ablation: bool, no_bisect: bool,
                   timeout: float, bisect_budget: float, known_issues: str | None,
                   search_upstream: bool, quiet: bool) -> None:
    """Write FINDING (a campaign's finding folder) up as a PyTorch issue: its kind, title,
    the minimal script, expected vs actual, a crash's full traceback, which backends and
    modes show it, what the compiler bisector names, versions, and the known issue it
    matches with what was searched.

    Exit status: 0 written; 1 nothing written, because the script does not fail on this
    machine or does not fail the same way a second time; 2 not a finding folder or a bad
    known-issues file.
    """
    def say(line: str) -> None:
        if not quiet:
            click.echo(f"report: {line}", err=True)

    issues = True if known_issues is None else (None if known_issues == "none" else
                                                known_issues)
    started = time.monotonic()
    try:
        issue = report(finding, ablation=not no_ablation, bisect=not no_bisect, timeout=timeout,
                       bisect_budget=bisect_budget, known_issues=issues,
                       search_upstream=search_upstream, say=say)
    except OracleError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    timings = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in issue.seconds.items())
    if issue.not_written:  # an issue must show a script that fails: none is written
        click.echo(f"report: not written: {issue.not_written} "
                   f"({time.monotonic() - started:.0f} s: {timings})", err=True)
        sys.exit(1)
    text = issue.markdown()
    if out is None:
        click.echo(text, nl=False)
    else:
        write_atomic(out, text.encode("utf-8"))
        say(f"wrote {out}")
    say(f"{issue.outcome.status}; {time.monotonic() - started:.0f} s ({timings})")
