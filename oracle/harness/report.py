"""Oracle results as a readable table or as one JSON document.

Targets are sorted most severe first, and among compiler bugs the confirmed ones first: a
difference in an exactly compared value, or one where the float64 reference sides with eager.
What targets printed and what the compiler logged stay out of the table (``--show-output``
prints them; the JSON always has them).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, is_dataclass
from enum import Enum
from typing import Any

from ..formats import OracleDocument
from ..judging.judge import Verdict
from ..judging.settings import CompileSettings
from .harness import TargetReport

# How sure a compiler-bug verdict is, best first (see ``confidence``).
CONFIDENCE = ("confirmed", "likely", "weak")


def confidence(report: TargetReport) -> str:
    """``confirmed``: an exact value differs, the reference sides with eager, or the triage
    recognised an integer jump (the reference sides with eager there); ``weak``: the
    reference sides with compiled (yet compiled is still too far from it); ``likely``:
    otherwise (the reference agrees with neither, or is unavailable)."""
    findings = [f for f in report.findings if f.verdict is report.verdict]
    if any(not d.floating for f in findings for d in f.differences):
        return "confirmed"
    if any(f.evidence is not None and f.evidence.cause for f in findings):
        return "confirmed"
    sides = {f.evidence.reference for f in findings if f.evidence is not None}
    if "eager" in sides:
        return "confirmed"
    if sides and sides <= {"compiled", "both"}:
        return "weak"
    return "likely"


def ordered(reports: list[TargetReport]) -> list[TargetReport]:
    """Most severe verdict first; within a verdict, the most confident first."""
    return sorted(reports, key=lambda r: (r.verdict.rank, CONFIDENCE.index(confidence(r))))


def _breaks(report: TargetReport, tree: str) -> str:
    counted = report.breaks.get(tree)
    if counted is None:
        return "-"
    return f"{counted.breaks}{'*' if counted.fullgraph_ok is False else ''}"


def _header(settings: CompileSettings, count: int) -> str:
    import torch

    return f"eqrewrite oracle: torch {torch.__version__}, {settings.describe()}, " \
           f"{count} target{'s' if count != 1 else ''}"


_LISTED = 10  # files without a target named in the table; JSON lists them all


def table(reports: list[TargetReport], unvalidated: list[str], problems: list[str],
          settings: CompileSettings, show_output: bool = False) -> str:
    """A fixed-width table: target, verdict, graph breaks before/after, detail."""
    reports = ordered(reports)
    rows = [("target", "verdict", "breaks", "after", "detail")]
    for report in reports:
        verdict = report.verdict.value
        if report.verdict is Verdict.COMPILER_BUG:
            verdict += f" ({confidence(report)})"
        detail = report.detail.splitlines()[0][:110] if report.detail else ""
        rows.append((report.target, verdict, _breaks(report, "original"),
                     _breaks(report, "rewritten"), detail))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [_header(settings, len(reports)), ""]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4]
              for row in rows]
    lines.insert(3, "-" * min(120, sum(widths) + 10))
    if any("*" in row[2] + row[3] for row in rows[1:]):
        lines.append("(* : Dynamo's frames did not compile as one graph)")
    for report in reports:
        lines += _details(report, show_output)
    lines += [f"unvalidated: {item}" for item in unvalidated]
    lines += [f"no target: {problem}" for problem in problems[:_LISTED]]
    if len(problems) > _LISTED:
        lines.append(f"no target: ... and {len(problems) - _LISTED} more files "
                     "(all listed in --format json)")
    counts: dict[str, int] = {}
    for report in reports:
        counts[report.verdict.value] = counts.get(report.verdict.value, 0) + 1
    lines.append(", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
                 or "no targets")
    return "\n".join(lines)


def _details(report: TargetReport, show_output: bool) -> list[str]:
    lines = []
    for undone in report.reverted:
        lines.append(f"reverted in {report.target}: {undone.file}:{undone.line} {undone.rule} "
                     f"({undone.before} -> {undone.after})")
    for finding in report.findings:
        if finding.evidence is not None and finding.verdict is not Verdict.NONDETERMINISTIC:
            lines.append(f"  {report.target} [{finding.right}] {finding.verdict.value}: "
                         f"{finding.evidence.summary()}")
        if finding.reproducer:
            lines.append(f"reproducer for {report.target}: {finding.reproducer}")
    for tree, counted in report.breaks.items():
        for reason in counted.reasons:
            where = f" at {reason.frame}" if reason.frame else ""
            lines.append(f"  {report.target} [{tree}] {reason.gb_id or '?'} "
                         f"{reason.gb_type or reason.reason}{where} (x{reason.count})")
    if show_output:
        printed = _printed(report)
        for stream in ("stdout", "stderr"):
            if printed.get(stream):
                lines.append(f"  {report.target} printed on {stream}:")
                lines += [f"    {line}" for line in printed[stream].splitlines()]
        for label, diagnostics in report.diagnostics.items():
            lines.append(f"  {report.target} compiler output ({label}):")
            lines += [f"    {line}" for text in diagnostics for line in text.splitlines()]
    return lines


def _printed(report: TargetReport) -> dict[str, str]:
    if report.reference is None or report.reference.observed is None:
        return {}
    printed: dict[str, str] = report.reference.observed.get("printed", {})
    return printed


def _plain(value: object) -> Any:
    """``value`` as JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return str(value)


def records(reports: list[TargetReport], unvalidated: list[str], problems: list[str],
            settings: CompileSettings, start_seconds: float) -> str:
    """The JSON document of ``document``, as text."""
    return json.dumps(document(reports, unvalidated, problems, settings, start_seconds),
                      indent=2)


def document(reports: list[TargetReport], unvalidated: list[str], problems: list[str],
             settings: CompileSettings, start_seconds: float) -> OracleDocument:
    """JSON-ready: settings, then one record per target with verdict, confidence, findings
    (with their evidence), breaks, timings, what the target printed and the compiler's
    output."""
    import torch

    document: OracleDocument = {
        "torch": torch.__version__, "settings": _plain(settings),
        "worker_start_seconds": start_seconds, "targets": [],
        "unvalidated": unvalidated, "no_target": problems}
    for report in ordered(reports):
        record = _plain({k: v for k, v in vars(report).items() if k != "reference"})
        record["confidence"] = confidence(report) if report.verdict is Verdict.COMPILER_BUG \
            else None
        record["printed"] = _printed(report)
        for tree, counted in report.breaks.items():
            record["breaks"][tree]["breaks"] = counted.breaks
        document["targets"].append(record)
    return document
