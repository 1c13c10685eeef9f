"""Markdown for pull-request comments: the summary and the causes as tables, the dynamic
measurements, then the findings per file in collapsed sections."""

from __future__ import annotations

from typing import Any

from . import (
    RAISES_ISSUE,
    breaks_key,
    cells,
    compile_failures,
    fix_text,
    share,
    switch_names,
    why_text,
)


def to_markdown(document: dict[str, Any]) -> str:
    lines = _summary(document)
    dynamic = document.get("dynamic")
    if dynamic:
        lines += _dynamic(dynamic)
    lines += _findings(document)
    return "\n".join(lines) + "\n"


def _cell(text: object) -> str:
    """Table-safe text: pipes escaped, one line."""
    return " ".join(str(text).replace("|", "\\|").split())


def _code(text: str, limit: int = 80) -> str:
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return "`" + _cell(text).replace("`", "'") + "`"


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _summary(document: dict[str, Any]) -> list[str]:
    s = document["summary"]
    total = s["findings"]
    lines = ["## eqrewrite graph-break audit", "",
             f"**{total} finding{'s' if total != 1 else ''}** in {s['files_with_findings']} of "
             f"{s['files']} files."]
    if total:
        f = s["by_fix"]
        lines.append(f"Fixable by a rule: **{share(f['rule'], total)}**, by a Dynamo setting: "
                     f"{share(f['setting'], total)}, manual: {share(f['manual'], total)}.")
    baseline = document.get("baseline")
    if baseline:
        lines.append(f"Against the baseline `{baseline['path']}`: {baseline['new']} new, "
                     f"{baseline['known']} known, {baseline['fixed']} fixed.")
    lines += [f"- error: `{e['file']}:{e['line']}`: {e['message']}" for e in document["errors"]]
    lines.append("")
    if s["causes"]:
        lines += _table(["cause", "count", "by rule", "by setting", "manual"],
                        [[f"{c['title']} (`{c['pattern']}`)", c["count"], c["rule"],
                          c["setting"], c["manual"]] for c in s["causes"]])
    return lines


def _dynamic(dynamic: dict[str, Any]) -> list[str]:
    t = dynamic["totals"]
    lines = ["### Measured (`--run`)", "",
             f"{t['targets']} targets, torch {dynamic['torch']}, {dynamic['settings']}: "
             f"**{t['breaks']} breaks**, {t['graphs']} graphs, {t['breaking']} targets break, "
             f"{t['fullgraph_ok']} compile with `fullgraph=True`.", ""]
    lines += _table(["target", "graphs", "breaks", "fullgraph", "recompiles", "compile s",
                     "outputs"],
                    [[r["name"], "-", "-", "-", "-", "-", r["error"]] if r["error"] else
                     [r["name"], r["graphs"], r["breaks"], _yes(r["fullgraph"]),
                      r["recompilations"], f"{r['compile_seconds']:.2f}",
                      _equal(r["outputs_equal"])] for r in dynamic["targets"]])
    if dynamic["breaks"]:
        lines += ["Distinct breaks (by GB id and site):", ""]
        lines += _table(["count", "break", "cause", "source", "targets"],
                        [[b["count"], breaks_key(b), b.get("gb_type") or b["reason"],
                          _code((b.get("frame") or {}).get("source", "")),
                          ", ".join(b["targets"])] for b in dynamic["breaks"]])
    if dynamic.get("before_after"):
        lines += _before_after(dynamic["before_after"])
    if dynamic.get("what_if"):
        lines += _what_if(dynamic["what_if"])
    if dynamic.get("switches"):
        lines += _switches(dynamic["switches"])
    return lines


def _switches(switches: dict[str, Any]) -> list[str]:
    t, columns = switches["totals"], cells(switches)
    lines = [f"### With and without `{switch_names(switches)}`", "",
             "Breaks: " + ", ".join(f"{title} **{t['breaks'][mode][tree]}**"
                                    for mode, tree, title in columns) + "."]
    if t.get("exact"):
        lines.append(f"The rewrite is exact (eager bit for bit, compiled by the oracle's "
                     f"comparison) for {t['exact']['default']} of {t['targets']} targets by "
                     f"default, {t['exact']['switches']} with the switches.")
    lines += ["", "Break sites removed by: " + ", ".join(
        f"{name} **{count}**" for name, count in switches["removed_by"].items())
        + " (rules: the rewrite alone; switches: the switches alone; either: each alone; "
        "together: only both; new: not a break of the original code by default).", ""]
    rows = []
    for r in switches["targets"]:
        if r["error"]:
            rows.append([r["name"], *("-" for _ in columns), r["error"]])
            continue
        exact = r.get("exact")
        rows.append([r["name"], *(r["breaks"][m][tr] for m, tr, _ in columns),
                     f"{_yes(exact['default'])} / {_yes(exact['switches'])}" if exact
                     else "-"])
    lines += _table(["target", *(title for _, _, title in columns),
                     "rewrite exact (default / switches)"], rows)
    failures = compile_failures(switches)
    if failures:
        lines += [f"**Compiled runs that raise** where eager does not: a program run so stops "
                  f"there instead of breaking ([pytorch#180596]({RAISES_ISSUE})).", ""]
        lines += [f"- {failure}" for failure in failures] + [""]
    lines += ["<details><summary>Every break site</summary>", ""]
    lines += _table(["break", "source", *(title for _, _, title in columns), "removed by"],
                    [[breaks_key(s), _code((s.get("frame") or {}).get("source", "")),
                      *(s["count"][m][tr] for m, tr, _ in columns), s["removed_by"]]
                     for s in switches["sites"]])
    return lines + ["</details>", ""]


def _before_after(comparison: dict[str, Any]) -> list[str]:
    t = comparison["totals"]
    lines = [f"### Before / after `{', '.join(comparison['rules'])}`", "",
             f"Breaks **{t['before']['breaks']} → {t['after']['breaks']}** "
             f"({round(100 * t['removed_share'])} % removed), graphs {t['before']['graphs']} → "
             f"{t['after']['graphs']}, `fullgraph=True` {t['before']['fullgraph_ok']} → "
             f"{t['after']['fullgraph_ok']} targets, outputs equal for {t['outputs_equal']} of "
             f"{t['targets']}.", ""]
    rows = []
    for r in comparison["targets"]:
        if r["error"]:
            rows.append([r["name"], "-", "-", "-", r["error"], "-"])
            continue
        ratio = f"×{r['latency_ratio']:.2f}" if r.get("latency_ratio") else "-"
        rows.append([r["name"], f"{r['before']['breaks']} → {r['after']['breaks']}",
                     f"{r['before']['graphs']} → {r['after']['graphs']}",
                     f"{_yes(r['before']['fullgraph'])} → {_yes(r['after']['fullgraph'])}",
                     _equal(r["outputs_equal"]), ratio])
    return lines + _table(["target", "breaks", "graphs", "fullgraph", "outputs",
                           "compiled latency"], rows)


def _what_if(what_if: dict[str, Any]) -> list[str]:
    lines = [f"### What if (Dynamo switches, on the {what_if['tree']} code)", ""]
    lines += _table(["switch", "targets", "breaks removed", "targets fixed", "outputs"],
                    [[f"`{s['switch']}` = {s['value']}", s["targets"], s["breaks_removed"],
                      s["targets_fixed"], "equal" if s["outputs_equal"] else "DIFFER"]
                     for s in what_if["switches"]])
    rows = [[r["target"], f"`{r['switch']}`", "-", r["error"], "-"] if r.get("error") else
            [r["target"], f"`{r['switch']}`", f"{r['breaks_before']} → {r['breaks_after']}",
             ", ".join(r["removed"] + r.get("reduced", [])) or "none",
             _equal(r["outputs_equal"], r["printed_equal"])]
            for r in what_if["runs"]]
    return lines + ["<details><summary>Every run</summary>", ""] + _table(
        ["target", "switch", "breaks", "removed", "outputs"], rows) + ["</details>", ""]


def _findings(document: dict[str, Any]) -> list[str]:
    by_file: dict[str, list[dict[str, Any]]] = {}
    for finding in document["findings"]:
        by_file.setdefault(finding["file"], []).append(finding)
    lines = ["### Findings", ""] if by_file else []
    for file, findings in by_file.items():
        lines += [f"<details><summary><code>{file}</code>: {len(findings)}</summary>", ""]
        lines += _table(["line", "pattern", "code", "fix", "details"],
                        [[f["line"], f"`{f['pattern']}`", _code(f["code"]), fix_text(f),
                          _details(f)] for f in findings])
        lines += ["</details>", ""]
    return lines


def _details(finding: dict[str, Any]) -> str:
    if finding["fix"] == "rule" and finding.get("rewrite"):
        return "→ " + _code(finding["rewrite"]["after"], 100)
    text = why_text(finding)
    if finding.get("observed"):
        text += f" Seen {finding['observed']['breaks']}×."
    return text


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _equal(value: bool | None, printed: bool | None = None) -> str:
    if value is None:
        return "-"
    text = "equal" if value else "**differ**"
    return text + (", printed output differs" if printed is False else "")
