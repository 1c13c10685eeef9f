"""Oracle results as a readable table or as JSON records (one per target)."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass

from .harness import TargetReport


def _breaks(report: TargetReport, tree: str) -> str:
    counted = report.breaks.get(tree)
    if counted is None:
        return "-"
    return f"{counted.breaks}{'' if counted.fullgraph_ok else '*'}"


def table(reports: list[TargetReport], unvalidated: list[str], problems: list[str]) -> str:
    """A fixed-width table: target, verdict, graph breaks before/after, detail."""
    rows = [("target", "verdict", "breaks", "after", "detail")]
    for report in reports:
        rows.append((report.target, report.verdict, _breaks(report, "original"),
                     _breaks(report, "rewritten"), report.detail.splitlines()[0][:100]
                     if report.detail else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4]
             for row in rows]
    lines.insert(1, "-" * min(120, sum(widths) + 10))
    lines.append("(* : torch.compile(fullgraph=True) fails)")
    for report in reports:
        for undone in report.reverted:
            lines.append(f"reverted in {report.target}: {undone.file}:{undone.line} {undone.rule} "
                         f"({undone.before} -> {undone.after})")
        for finding in report.findings:
            if finding.reproducer:
                lines.append(f"reproducer for {report.target}: {finding.reproducer}")
        for tree, counted in report.breaks.items():
            for reason in counted.reasons:
                lines.append(f"  {report.target} [{tree}] {reason.gb_id or '?'} "
                             f"{reason.gb_type or reason.reason} at {reason.frame} "
                             f"(x{reason.count})")
    lines += [f"unvalidated: {item}" for item in unvalidated]
    lines += [f"no target: {problem}" for problem in problems]
    counts: dict[str, int] = {}
    for report in reports:
        counts[report.verdict] = counts.get(report.verdict, 0) + 1
    lines.append(", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
                 or "no targets")
    return "\n".join(lines)


def _plain(value):
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return str(value)


def records(reports: list[TargetReport], unvalidated: list[str]) -> str:
    """JSON: one record per target with verdict, differences, breaks and timings."""
    document = {"targets": [], "unvalidated": unvalidated}
    for report in reports:
        record = _plain({k: v for k, v in vars(report).items() if k != "reference"})
        for tree, counted in report.breaks.items():
            record["breaks"][tree]["breaks"] = counted.breaks
        document["targets"].append(record)
    return json.dumps(document, indent=2)
