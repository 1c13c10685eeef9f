"""A finding as an issue for pytorch/pytorch: Markdown in the shape of its bug-report template.

A title in the tracker's style (``[inductor] fmin: output strides differ from eager``, from
the backend that shows it, the ops of the program and the kind of difference), then
"🐛 Describe the bug": what differs in a sentence or two, the minimal script, expected
against actual as the script printed them (or the exception's last line), which backends
and modes show it (each run apart), what ``torch._inductor.compiler_bisector`` names, the
known issue it matches if any, and "Versions" from ``torch.utils.collect_env``.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..campaign import known
from .finding import Finding, difference_phrase, load, ops_in
from .runs import ROWS, Bisection, Outcome, Row, Runner, ablation, bisect, collect_env

_COMPONENTS = {"eager": "[dynamo]", "aot_eager": "[aot_autograd]", "inductor": "[inductor]"}
_EXPECTED_LINES = 40  # of what the script printed, in the report


@dataclass
class Options:
    ablation: bool = True
    bisect: bool = True
    timeout: float = 300.0        # seconds for each run of the script
    bisect_budget: float = 900.0  # seconds for the whole bisection
    known_issues: Path | None = known.DEFAULT_FILE
    rows: tuple[tuple[str, str | None], ...] = ROWS  # the ablation's (backend, mode) rows


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
    known_count: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return title(self)

    def markdown(self) -> str:
        return render(self)


def build(folder: Path, options: Options, say: Callable[[str], None] = lambda _: None
          ) -> Report:
    """Run what the report shows; ReportError (from ``load``) for a folder it cannot use,
    KnownIssuesError for a bad known-issues file."""
    finding = load(folder)
    issues = known.load(options.known_issues)
    runner = Runner(finding, options.timeout, say=say)
    seconds: dict[str, float] = {}
    try:
        started = time.monotonic()
        say(f"{finding.source}: does the eager run give its inputs gradients? (starting torch)")
        runner.grad_inputs = runner.probe()
        seconds["probe"] = time.monotonic() - started
        script = runner.script()
        say(f"running the script ({finding.settings['backend']})")
        outcome = runner.run(script)
        seconds["script"] = outcome.completed.seconds
        report = Report(finding, script, outcome, runner.grad_inputs, seconds=seconds,
                        known=known.recognise(issues, finding.record), known_count=len(issues))
        environment = time.monotonic()
        report.environment, report.environment_note = collect_env(runner.scratch,
                                                                  options.timeout)
        seconds["collect_env"] = time.monotonic() - environment
        cuda = any(line.startswith("Is CUDA available: True") for line in report.environment)
        if options.ablation:
            started = time.monotonic()
            report.rows = ablation(runner, outcome, cuda, options.rows)
            seconds["ablation"] = time.monotonic() - started
        if options.bisect:
            report.bisection = _bisect(runner, report, options.bisect_budget, say)
            seconds["bisect"] = report.bisection.seconds
    finally:
        shutil.rmtree(runner.scratch, ignore_errors=True)
    return report


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
    what = _what(report)
    return f"{_component(report)} {named + ': ' if named else ''}{what}"


def _component(report: Report) -> str:
    """The lowest backend that shows the finding (Dynamo alone, AOT autograd, Inductor)."""
    for row in report.rows:
        if row.outcome is not None and row.outcome.reproduces and row.backend in _COMPONENTS:
            return _COMPONENTS[row.backend]
    return _COMPONENTS.get(str(report.finding.settings["backend"]), "[torch.compile]")


def _what(report: Report) -> str:
    """The kind of difference, in a few words."""
    outcome = report.outcome
    return difference_phrase(report.finding, outcome.message if outcome.status == "raises"
                             else "")


# -- the Markdown -------------------------------------------------------------------------------


def render(report: Report) -> str:
    finding = report.finding
    lines = [f"# {report.title}", "", "### 🐛 Describe the bug", "", _description(report), "",
             "```python", report.script.rstrip(), "```", "", "**Expected** (eager) vs "
             "**actual** (`torch.compile`), as the script prints them:", "", "```",
             *_printed(report.outcome), "```", ""]
    if report.rows:
        lines += ["**Which backends and modes show it** (the script run once for each, "
                  "in a fresh process):", "", "| backend | mode | result |", "|---|---|---|"]
        for row in report.rows:
            result = row.outcome.describe() if row.outcome is not None else row.note
            lines.append(f"| {row.backend} | {row.mode or 'default'} | {result} |")
        lines.append("")
    if report.bisection is not None:
        lines += [f"**Bisection:** {report.bisection.describe()}", ""]
    lines += [f"**Known issues:** {_known_line(report)}", ""]
    lines += ["### Versions", "", "<details><summary>python -m torch.utils.collect_env "
              "(relevant lines)</summary>", "", "```", *(report.environment or [
                  report.environment_note or "not collected"]), "```", "", "</details>", ""]
    seeds = finding.record.get("seeds") or []
    origin = (f"Found by differential testing of a generated program (seed "
              f"{', '.join(map(str, seeds))}); the program above is `{finding.source}` of "
              f"the finding folder.") if seeds else f"The program is `{finding.source}`."
    lines += [origin, "", f"Generated by eqrewrite {_version()}"]
    return "\n".join(lines) + "\n"


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
    if report.grad_inputs and not finding.settings.get("inference"):
        second += " Floating inputs require grad, as in the runs that found it."
    return f"{first} {second}"


def _compile_call(settings: dict[str, Any]) -> str:
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


def _known_line(report: Report) -> str:
    issue = report.known
    if issue is None:
        return (f"no known issue matches (checked against {report.known_count} in the "
                "known-issues file).")
    number = issue.url.rstrip("/").rpartition("/")[2]
    return f"matches known issue #{number} ({issue.title}): {issue.url}"


def _version() -> str:
    try:
        return importlib.metadata.version("eqrewrite")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"
