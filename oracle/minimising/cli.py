"""``eqrewrite reduce FOLDER``: shrink a reproducer folder to a minimal standalone script.

Registered through the plugin registry (``plugin.py``); a thin layer over ``api.reduce``
(options in, one call, its result printed). This module stays cheap to import (the
reduction itself lives in ``reduce.py`` and runs torch only in its checking process).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..api import NotReproducedError, OracleError, reduce

if TYPE_CHECKING:  # the minimiser itself is imported only when the command runs
    from .reduce import Result


@click.command("reduce")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--max-tests", type=click.IntRange(min=1), default=500, show_default=True,
              help="Candidates to judge at most.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Seconds per candidate (default: 5 times the first run, at least 60).")
@click.option("--time-budget", type=click.FloatRange(min=1), default=None,
              help="Seconds for the whole reduction (the best program so far is written).")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for minimal.py and reduced/ (default: FOLDER).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format (on stdout).")
@click.option("--no-verify", is_flag=True,
              help="Do not run the written reproducers once more at the end.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Candidates judged at once, each in a checking process of its own (the "
                   "program reduced is the same as with 1).")
@click.option("--confirm-every", type=click.IntRange(min=0), default=16, show_default=True,
              help="When a cheaper backend shows the finding too, keep candidates on its "
                   "word and confirm the program with the full one after this many (and at "
                   "the end); 0: compile every candidate with the full backend.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def reduce_command(folder: Path, max_tests: int, timeout: float | None,
                   time_budget: float | None, out: Path | None, output_format: str,
                   no_verify: bool, jobs: int, confirm_every: int, quiet: bool) -> None:
    """Shrink the reproducer in FOLDER (a compiler-bug or compile-crash finding) to the
    smallest program with the same verdict and signature; write FOLDER/minimal.py and
    FOLDER/reduced/.

    Exit status: 0 reduced, 1 the folder does not reproduce (or the result did not fail
    again, or minimal.py is broken), 2 not a reproducer folder.
    """
    def say(line: str) -> None:
        if not quiet:
            click.echo(f"reduce: {line}", err=True)

    try:
        result = reduce(folder, out=out, max_tests=max_tests, timeout=timeout,
                        time_budget=time_budget, confirm_every=confirm_every,
                        verify=not no_verify, jobs=jobs, say=say)
    except OracleError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except NotReproducedError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    if output_format == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(_render(result))
    sys.exit(result.status)


def _render(result: Result) -> str:
    from .standalone import BROKEN_EXIT

    rows = [("statements", "statements"), ("tokens", "tokens"),
            ("input elements", "input_elements")]
    tally = result.tally
    lines = [f"{result.target}: {result.signature.describe()}",
             f"{'':16}{'before':>8}{'after':>8}"]
    lines += [f"{label:16}{result.before[key]:>8}{result.after[key]:>8}"
              for label, key in rows]
    lines.append(f"candidates: {tally.tried} judged, {tally.accepted} kept, {tally.timeouts} "
                 f"timed out, {tally.errors} failed eagerly or could not run; "
                 f"{result.seconds:.0f}s")
    screened = (f"{tally.screened_eager} rejected by one eager run, "
                f"{tally.screened_triage + tally.screened_forward} on their differences "
                f"before the triage, {tally.screened_forward} of them before the compiled "
                f"backward, {tally.screened_layout} shrunk inputs that changed layout before "
                f"any run")
    if result.screen_backend:
        screened += f", {tally.screened_backend} by {result.screen_backend}"
    if tally.confirmations:
        screened += (f"; {tally.confirmations} full judgements confirmed what "
                     f"{result.screen_backend} kept, {tally.reverted} kept undone")
    lines.append(f"throughput: {result.per_minute:.1f} candidates/minute with {result.jobs} "
                 f"job{'s' if result.jobs != 1 else ''} ({screened}"
                 + (f"; {tally.speculative} judged ahead and dropped" if result.jobs > 1
                    else "") + ")")
    if result.stopped:
        lines.append(f"stopped early: {result.stopped}")
    if result.weights_dropped:
        lines.append("saved weights not needed (the module is built from the seed)")
    if result.dropped:
        lines.append(f"settings not needed: {', '.join(result.dropped)}")
    lines.append(f"wrote {result.minimal} and {result.reduced}/")
    for name, code in result.verified.items():
        meaning = {1: "fails (exit 1)", 0: "does NOT fail (exit 0)", None: "timed out"}.get(
            code, f"{'broken' if code == BROKEN_EXIT else 'crashed'} (exit {code})")
        why = result.errors.get(name)
        lines.append(f"  {name}: {meaning}" + (f": {why}" if why else ""))
    return "\n".join(lines)
