"""A finding as an issue for pytorch/pytorch: Markdown in the shape of its bug-report template.

A title in the tracker's style (``[inductor] fmin: output strides differ from eager``, from
the lowest backend the ablation shows it under, the ops of the program and the kind of
difference, read from the values eager and compiled gave when NaN or infinity is on one side
only), then "🐛 Describe the bug": whether it is a crash, a silent wrong result or cosmetic,
what differs in a sentence or two, the minimal script, expected against actual as the script
printed them, a crash's full traceback (``TORCHDYNAMO_VERBOSE=1``), which backends and modes
show it and the first layer that does, what ``torch._inductor.compiler_bisector`` names, the
known issue it matches and what was searched, and "Versions" from ``torch.utils.collect_env``.
Only a finding whose script fails twice here is written up (``Report.not_written``).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..campaign import known
from ..campaign.known import KnownIssues
from ..formats import SettingsRecord
from . import sections, upstream, values
from .finding import Finding, area_of, deciding, difference_phrase, load, ops_in
from .runs import ROWS, Bisection, Outcome, Row, Runner, ablation, bisect, collect_env
from .values import Values, headline, sentence

_EXPECTED_LINES = 40  # of what the script printed, in the report


@dataclass
class Options:
    ablation: bool = True
    bisect: bool = True
    timeout: float = 300.0        # seconds for each run of the script
    bisect_budget: float = 900.0  # seconds for the whole bisection
    known_issues: Path | None = known.DEFAULT_FILE
    rows: tuple[tuple[str, str | None], ...] = ROWS  # the ablation's (backend, mode) rows
    search_upstream: bool = False  # ask GitHub's issue search (upstream.py)
    github_api: str | None = None  # its address (default: $EQREWRITE_GITHUB_API or GitHub's)


@dataclass
class Report:
    """Everything the Markdown is made of."""

    finding: Finding
    script: str
    outcome: Outcome
    grad_inputs: bool
    rows: list[Row] = field(default_factory=list)
    bisection: Bisection | None = None
    environment: list[str] = field(default_factory=list)
    environment_note: str = ""
    known: known.KnownIssue | None = None
    known_file: KnownIssues = field(default_factory=KnownIssues)
    upstream: upstream.Search | None = None  # None: not searched
    second: Outcome | None = None   # the script run again (TORCHDYNAMO_VERBOSE=1 for a crash)
    values: Values | None = None    # what eager and compiled gave (values.py)
    ablated: bool = False           # was the ablation run
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def known_count(self) -> int:
        return len(self.known_file.issues)

    @property
    def confirmed(self) -> bool:
        """Did the script fail here, and fail the same way when run a second time?"""
        return (self.outcome.reproduces and self.second is not None
                and self.second.status == self.outcome.status)

    @property
    def not_written(self) -> str:
        """Why no issue should be written from this report ("" when it should)."""
        if not self.outcome.reproduces:
            return f"the script does not fail on this machine ({self.outcome.describe()})"
        if not self.confirmed:
            second = self.second.describe() if self.second is not None else "not run"
            return (f"the script failed once ({self.outcome.status}) but not the same way "
                    f"on a second run ({second})")
        return ""

    @property
    def title(self) -> str:
        return title(self)

    def markdown(self) -> str:
        return render(self)


def build(folder: Path, options: Options, say: Callable[[str], None] = lambda _: None
          ) -> Report:
    """Run what the report shows; ReportError (from ``load``) for a folder it cannot use,
    KnownIssuesError for a bad known-issues file. The ablation, bisection, versions and
    searches run only when the script fails twice (``Report.confirmed``)."""
    finding = load(folder)
    issues = known.read(options.known_issues)
    runner = Runner(finding, options.timeout, say=say)
    try:
        report = _first_run(runner, issues, say)
        if report.outcome.reproduces:
            _second_run(runner, report, say)
        if report.confirmed:
            _measure(runner, report, options, say)
    finally:
        shutil.rmtree(runner.scratch, ignore_errors=True)
    return report


def _first_run(runner: Runner, issues: known.KnownIssues, say: Callable[[str], None]
               ) -> Report:
    finding = runner.finding
    started = time.monotonic()
    say(f"{finding.source}: does the eager run give its inputs gradients? (starting torch)")
    runner.grad_inputs = runner.probe()
    seconds = {"probe": time.monotonic() - started}
    script = runner.script()
    say(f"running the script ({finding.settings['backend']})")
    outcome = runner.run(script)
    seconds["script"] = outcome.completed.seconds
    return Report(finding, script, outcome, runner.grad_inputs, seconds=seconds,
                  known=known.recognise(issues.issues, finding.record, finding.program),
                  known_file=issues)


def _second_run(runner: Runner, report: Report, say: Callable[[str], None]) -> None:
    """The script once more: it must fail the same way. A crash runs with
    TORCHDYNAMO_VERBOSE=1, so the report carries Dynamo's full internal traceback."""
    verbose = report.outcome.status == "raises"
    say("running the script a second time" + (" (TORCHDYNAMO_VERBOSE=1)" if verbose else ""))
    env = dict(os.environ, TORCHDYNAMO_VERBOSE="1") if verbose else None
    report.second = runner.run(report.script, env)
    report.seconds["second run"] = report.second.completed.seconds


def _measure(runner: Runner, report: Report, options: Options,
             say: Callable[[str], None]) -> None:
    """The values, the versions, the ablation, the bisection and the searches."""
    seconds = report.seconds
    if report.outcome.status == "differs":
        started = time.monotonic()
        say("reading what eager and compiled give")
        report.values = values.probe(runner, report.script)
        seconds["values"] = time.monotonic() - started
    started = time.monotonic()
    report.environment, report.environment_note = collect_env(runner.scratch,
                                                              options.timeout)
    seconds["collect_env"] = time.monotonic() - started
    cuda = any(line.startswith("Is CUDA available: True") for line in report.environment)
    if options.ablation:
        started = time.monotonic()
        report.rows, report.ablated = ablation(runner, report.outcome, cuda, options.rows), True
        seconds["ablation"] = time.monotonic() - started
    if options.bisect:
        report.bisection = _bisect(runner, report, options.bisect_budget, say)
        seconds["bisect"] = report.bisection.seconds
    if options.search_upstream:
        started = time.monotonic()
        say("searching GitHub's issues")
        report.upstream = upstream.search(sections.upstream_query(report), options.github_api)
        seconds["search"] = time.monotonic() - started


def _bisect(runner: Runner, report: Report, budget: float, say: Callable[[str], None]
            ) -> Bisection:
    if ":" in str(report.finding.settings["backend"]):
        return Bisection(note="Not bisected: the finding's backend is a custom one "
                              f"(`{report.finding.settings['backend']}`), which "
                              "`torch._inductor.compiler_bisector` does not cover.")
    if not report.outcome.reproduces:
        return Bisection(note="Not bisected: the script does not fail on this machine.")
    say("bisecting with torch._inductor.compiler_bisector")
    return bisect(runner, budget)


# -- the title ----------------------------------------------------------------------------------


def title(report: Report) -> str:
    finding = report.finding
    ops = ops_in(finding.program, list(finding.record.get("signature_ops") or ()),
                 finding.target["attribute"])
    named = ", ".join(ops[:3]) + (" …" if len(ops) > 3 else "")
    return f"{sections.component(report)} {named + ': ' if named else ''}{_what(report)}"


def _what(report: Report) -> str:
    """The kind of difference, in a few words: from the values eager and compiled gave
    here when NaN or infinity is on one side only, else from the record."""
    outcome = report.outcome
    difference = deciding(report.finding)
    area = area_of(difference[0]) if difference else "output"
    measured = headline(report.values, area) if report.values is not None else None
    return measured or difference_phrase(
        report.finding, outcome.message if outcome.status == "raises" else "")


# -- the Markdown -------------------------------------------------------------------------------


def render(report: Report) -> str:
    lines = [f"# {report.title}", "", "### 🐛 Describe the bug", "", _description(report), "",
             "```python", report.script.rstrip(), "```", "", "**Expected** (eager) vs "
             "**actual** (`torch.compile`), as the script prints them:", "", "```",
             *_printed(report.outcome), "```", ""]
    lines += sections.traceback(report)
    lines += _ablation(report)
    if report.bisection is not None:
        lines += [f"**Bisection:** {report.bisection.describe()}", ""]
    lines += [f"**Known issues:** {sections.known_line(report)}", ""]
    lines += sections.near_matches(report)
    lines += ["### Versions", "", "<details><summary>python -m torch.utils.collect_env "
              "(relevant lines)</summary>", "", "```", *(report.environment or [
                  report.environment_note or "not collected"]), "```", "", "</details>", ""]
    lines += [sections.origin(report.finding), "", f"Generated by eqrewrite {_version()}"]
    return "\n".join(lines) + "\n"


def _ablation(report: Report) -> list[str]:
    lines = []
    if report.rows:
        lines += ["**Which backends and modes show it** (the script run once for each, "
                  "in a fresh process):", "", "| backend | mode | result |", "|---|---|---|"]
        for row in report.rows:
            result = row.outcome.describe() if row.outcome is not None else row.note
            lines.append(f"| {row.backend} | {row.mode or 'default'} | {result} |")
        lines.append("")
    return lines + [f"**First layer that shows it:** {sections.first_layer(report)}", ""]


def _description(report: Report) -> str:
    finding = report.finding
    settings = _compile_call(finding.settings)
    outcome = report.outcome
    if finding.crash:
        first = (f"{settings} raises where eager runs the same program"
                 f"{': ' + _code(outcome.message) if outcome.status == 'raises' else ''}.")
    else:
        first = f"With {settings}: {_what(report)}."
    if outcome.status == "raises" and not finding.crash:
        second = f"The script exits 1 with {_code(outcome.message)}."
    elif outcome.status == "differs":
        recorded = finding.differences[0][2] if finding.differences else finding.headline
        second = ("On the program before it was minimised, the oracle recorded: "
                  if finding.reduced else "The oracle recorded: ") + f"{_code(recorded)}."
    elif outcome.status == "agrees":
        second = ("**The script passes on this machine**: the finding did not reproduce "
                  "here (the record below is from the campaign's machine).")
    elif outcome.status == "raises":
        second = "The script exits 1 with the traceback."
    else:
        second = f"The script's run: {outcome.describe()}."
    if report.values is not None:
        difference = deciding(finding)
        measured = sentence(report.values, area_of(difference[0]) if difference else "output")
        second += f" {measured}" if measured else ""
    if report.grad_inputs and not finding.settings.get("inference"):
        second += " Floating inputs require grad, as in the runs that found it."
    return f"{sections.kind_line(report)}\n\n{first} {second}"


def _compile_call(settings: SettingsRecord) -> str:
    arguments = [f"backend={settings['backend']!r}"]
    arguments += [f"{key}={settings[key]!r}" for key in ("mode", "dynamic")
                  if settings.get(key) is not None]
    arguments += ["fullgraph=True"] if settings.get("fullgraph") else []
    call = f"`torch.compile({', '.join(arguments)})`"
    switches = [f"inductor.{k}={v}" for k, v in settings.get("inductor_config") or ()]
    switches += [f"dynamo.{k}={v}" for k, v in settings.get("dynamo_config") or ()]
    if settings.get("inference"):
        switches.append("under torch.no_grad()")
    return call + (f" (with {', '.join(f'`{s}`' for s in switches)})" if switches else "")


def _code(text: str, limit: int = 300) -> str:
    text = text.strip().replace("`", "'")
    return f"`{text if len(text) <= limit else text[:limit - 1] + '…'}`"


def _printed(outcome: Outcome) -> list[str]:
    """The script's stdout (cut), then its difference line or the exception's last line."""
    lines = outcome.completed.stdout.rstrip().splitlines()
    if len(lines) > _EXPECTED_LINES:
        lines = lines[:_EXPECTED_LINES] + [f"... ({len(lines) - _EXPECTED_LINES} more lines)"]
    if outcome.status in ("raises", "eager-raises", "crashed"):
        lines.append(f"raised: {outcome.message}" if outcome.status != "crashed"
                     else outcome.message)
    elif outcome.status == "differs":
        lines += outcome.message.splitlines()
    elif outcome.status == "timeout":
        lines.append(f"(timed out after {outcome.completed.seconds:.0f} s)")
    return lines


def _version() -> str:
    try:
        return importlib.metadata.version("eqrewrite")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"
