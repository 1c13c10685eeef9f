"""The terminal report: compact rich tables, summary first, then the dynamic measurements,
then every finding with what fixes it (or why no rule did)."""

from __future__ import annotations

import io
import shutil
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import (
    RAISES_ISSUE,
    cells,
    compile_failures,
    fix_text,
    mode_counts,
    share,
    switch_names,
    why_text,
)

_WIDTH = 120  # when not writing to a terminal


def to_text(document: dict[str, Any], color: bool) -> str:
    buffer = io.StringIO()
    width = shutil.get_terminal_size((_WIDTH, 24)).columns if color else _WIDTH
    console = Console(file=buffer, width=width, force_terminal=color,
                      color_system="auto" if color else None, highlight=False,
                      markup=False)
    _summary(console, document)
    dynamic = document.get("dynamic")
    if dynamic:
        _dynamic(console, dynamic)
    _findings(console, document)
    return buffer.getvalue()


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", box=None,
                  pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _summary(console: Console, document: dict[str, Any]) -> None:
    s = document["summary"]
    total = s["findings"]
    console.print(Text(f"eqrewrite audit: {total} finding{'s' if total != 1 else ''} in "
                       f"{s['files_with_findings']} of {s['files']} files "
                       f"({s['seconds']:.2f} s)", style="bold"))
    if total:
        fixes = s["by_fix"]
        console.print(f"  fixable by rule {share(fixes['rule'], total)} · by Dynamo setting "
                      f"{share(fixes['setting'], total)} · manual {share(fixes['manual'], total)}")
    baseline = document.get("baseline")
    if baseline:
        console.print(f"  baseline {baseline['path']}: {baseline['new']} new, "
                      f"{baseline['known']} known, {baseline['fixed']} fixed")
    if s["suppressed"]:
        console.print(f"  {s['suppressed']} suppressed by `# eqrewrite: ignore`")
    for error in document["errors"]:
        console.print(f"  error: {error['file']}:{error['line']}: {error['message']}",
                      style="red")
    if s["causes"]:
        table = _table("\nTop causes", "pattern", "count", "rule", "setting", "manual")
        for cause in s["causes"]:
            table.add_row(cause["pattern"], str(cause["count"]), str(cause["rule"]),
                          str(cause["setting"]), str(cause["manual"]))
        console.print(table)


def _dynamic(console: Console, dynamic: dict[str, Any]) -> None:
    totals = dynamic["totals"]
    console.print(Text(f"\nDynamic: {totals['targets']} targets run ({dynamic['settings']}, "
                       f"torch {dynamic['torch']}): {totals['breaks']} breaks, "
                       f"{totals['breaking']} targets break, {totals['fullgraph_ok']} compile "
                       "with fullgraph=True", style="bold"))
    table = _table("", "target", "graphs", "breaks", "fullgraph", "skipped", "recompiles",
                   "compile s", "outputs")
    for target in dynamic["targets"]:
        if target.get("error"):
            table.add_row(target["name"], "-", "-", "-", "-", "-", "-", target["error"][:60])
            continue
        table.add_row(target["name"], str(target["graphs"]), str(target["breaks"]),
                      _yes(target["fullgraph"]), str(target["skipped_frames"]),
                      str(target["recompilations"]), f"{target['compile_seconds']:.2f}",
                      _equal(target["outputs_equal"]))
    console.print(table)
    if dynamic["breaks"]:
        table = _table("\nObserved breaks (deduplicated by GB id and site)", "count", "GB id",
                       "site", "cause", "source", "targets")
        table.columns[2].no_wrap = True
        for observed in dynamic["breaks"]:
            frame = observed.get("frame") or {}
            site = f"{frame['file']}:{frame['line']}" if frame else "?"
            table.add_row(str(observed["count"]), observed.get("gb_id") or "?", site,
                          observed.get("gb_type") or observed.get("reason", ""),
                          frame.get("source", ""), ", ".join(observed["targets"]))
        console.print(table)
    if dynamic.get("before_after"):
        _before_after(console, dynamic["before_after"])
    if dynamic.get("what_if"):
        _what_if(console, dynamic["what_if"])
    if dynamic.get("switches"):
        _switches(console, dynamic["switches"])


def _switches(console: Console, switches: dict[str, Any]) -> None:
    """Breaks with and without the switches, and which removes each site."""
    t, columns = switches["totals"], cells(switches)
    total = " · ".join(f"{title} {t['breaks'][mode][tree]}" for mode, tree, title in columns)
    exact = t.get("exact")
    console.print(Text(f"\nWith and without {switch_names(switches)}: breaks {total}"
                       + (f"; rewrite exact {exact['default']}/{t['targets']} default, "
                          f"{exact['switches']}/{t['targets']} with the switches"
                          if exact else ""), style="bold"))
    table = _table("", "target", *(title for _, _, title in columns), "rewrite exact")
    table.columns[0].no_wrap = True
    for row in switches["targets"]:
        if row.get("error"):
            table.add_row(row["name"], *("-" for _ in columns), row["error"][:60])
            continue
        exact_row = row.get("exact")
        table.add_row(row["name"], *(str(row["breaks"][m][tr]) for m, tr, _ in columns),
                      f"{_yes(exact_row['default'])} / {_yes(exact_row['switches'])}"
                      if exact_row else "-")
    console.print(table)
    for failure in compile_failures(switches):
        console.print(Text(f"warning: {failure}; a program run so stops there instead of "
                           f"breaking ({RAISES_ISSUE})", style="yellow"))
    by = switches["removed_by"]
    console.print("Break sites removed by: " + " · ".join(
        f"{name} {count}" for name, count in by.items()))
    table = _table(f"Per site (breaks {' → '.join(switches['trees'])})", "site", "GB id",
                   "source", "default", "switches", "removed by")
    table.columns[0].no_wrap = True
    for site in switches["sites"]:
        frame = site.get("frame") or {}
        table.add_row(f"{frame['file']}:{frame['line']}" if frame else "?",
                      site.get("gb_id") or "?", frame.get("source", ""),
                      mode_counts(switches, site["count"], "default"),
                      mode_counts(switches, site["count"], "switches"), site["removed_by"])
    console.print(table)


def _before_after(console: Console, comparison: dict[str, Any]) -> None:
    t = comparison["totals"]
    console.print(Text(f"\nBefore/after {', '.join(comparison['rules'])}: breaks "
                       f"{t['before']['breaks']} → {t['after']['breaks']}, graphs "
                       f"{t['before']['graphs']} → {t['after']['graphs']}, fullgraph "
                       f"{t['before']['fullgraph_ok']} → {t['after']['fullgraph_ok']} targets, "
                       f"outputs equal {t['outputs_equal']}/{t['targets']}", style="bold"))
    table = _table("", "target", "breaks", "graphs", "fullgraph", "outputs", "latency")
    for row in comparison["targets"]:
        if row.get("error"):
            table.add_row(row["name"], "-", "-", "-", row["error"][:60], "-")
            continue
        b, a = row["before"], row["after"]
        ratio = row.get("latency_ratio")
        table.add_row(row["name"], f"{b['breaks']} → {a['breaks']}",
                      f"{b['graphs']} → {a['graphs']}",
                      f"{_yes(b['fullgraph'])} → {_yes(a['fullgraph'])}",
                      _equal(row["outputs_equal"]), f"×{ratio:.2f}" if ratio else "-")
    console.print(table)


def _what_if(console: Console, what_if: dict[str, Any]) -> None:
    console.print(Text(f"\nWhat if (Dynamo switches on the {what_if['tree']} code)",
                       style="bold"))
    table = _table("", "switch", "target", "breaks", "removed", "outputs")
    for run in what_if["runs"]:
        if run.get("error"):
            table.add_row(run["switch"], run["target"], "-", run["error"][:60], "-")
            continue
        removed = ", ".join(run["removed"] + run.get("reduced", [])) or "none"
        table.add_row(f"{run['switch']}={run['value']}", run["target"],
                      f"{run['breaks_before']} → {run['breaks_after']}", removed,
                      _equal(run["outputs_equal"], run.get("printed_equal")))
    console.print(table)


def _findings(console: Console, document: dict[str, Any]) -> None:
    """One table per file: line, pattern, code (with the rewrite or the reason), fix."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    for finding in document["findings"]:
        by_file.setdefault(finding["file"], []).append(finding)
    for file, findings in by_file.items():
        table = Table(title=f"\n{file}", title_justify="left", title_style="bold", box=None,
                      show_header=False, pad_edge=False, expand=True)
        table.add_column("where", no_wrap=True)
        table.add_column("pattern", no_wrap=True, style="cyan")
        table.add_column("code", ratio=1, overflow="fold")
        table.add_column("fix", max_width=34, overflow="fold")
        for finding in findings:
            code = Text(finding["code"])
            detail = _detail(finding)
            if detail:
                code.append("\n" + detail, style="dim")
            table.add_row(f"{finding['line']}:{finding['column']}", finding["pattern"], code,
                          Text(_fix_cell(finding), style=_FIX_STYLES[finding["fix"]]))
        console.print(table)


_FIX_STYLES = {"rule": "green", "setting": "yellow", "manual": "red"}


def _fix_cell(finding: dict[str, Any]) -> str:
    fix = fix_text(finding)
    if finding["confidence"] == "likely":
        fix += " (likely)"
    observed = finding.get("observed")
    if observed:
        fix += f"; seen {observed['breaks']}x {', '.join(observed['gb_ids'])}"
    return fix


def _detail(finding: dict[str, Any]) -> str:
    if finding["fix"] == "rule" and finding.get("rewrite"):
        after = finding["rewrite"]["after"].strip().splitlines()
        return f"→ {after[0]}" + (" …" if len(after) > 1 else "")
    return why_text(finding)


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _equal(values: bool | None, printed: bool | None = None) -> str:
    if values is None:
        return "-"
    text = "equal" if values else "DIFFER"
    if printed is False:
        text += ", printed output differs"
    return text
