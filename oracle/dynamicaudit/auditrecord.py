"""The dynamic audit's measurements as the report's ``dynamic`` section (plain data, see the
audit's JSON schema): targets, breaks deduplicated by (GB id, site), before/after, what-if.

Outputs are judged with the oracle's own comparison (``judge.differ``: dtype-aware
tolerances, exact integers, printed text, module state, gradients); for a what-if run,
values and printed output are reported apart, since dropping a log message is the whole
point of ``ignore_logger_methods``.
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ..judging import compare as cmp
from ..judging.graphbreaks import registry
from ..judging.judge import differ
from ..judging.settings import CompileSettings, Target

if TYPE_CHECKING:
    from eqrewrite.rewriter.plugins import AuditRun

    from ..judging.graphbreaks import BreakReason, BreakReport
    from ..judging.protocol import RunResult
    from .probe import ProbeResult

# Each target's measurements (``DynamicAudit._measure``): "target", "settings", the probe of
# each tree ("original", "rewritten"), the what-if runs, and with --dynamo-config the probe
# of each tree with the switches ("switched": {tree: probe}, "switched_settings").
Measured = dict[str, Any]


class DynamicRecord(TypedDict):
    """The ``dynamic`` section of ``eqrewrite audit --run``'s JSON (``record``); its rows,
    as the audit's schema describes them, are built here and read by nobody else."""

    torch: str
    settings: str                   # the compile settings, described
    targets: list[dict[str, Any]]   # one row per target
    breaks: list[dict[str, Any]]    # merged by (GB id, site), most frequent first
    no_target: list[str]
    totals: dict[str, int]
    before_after: dict[str, Any] | None   # with rules: the rewritten tree's
    what_if: dict[str, Any] | None        # --what-if
    switches: dict[str, Any] | None       # --dynamo-config

_PRINTED = "result['printed']"

# difflib's (tag, i1, i2, j1, j2): lines i1:i2 of the original became j1:j2 of the rewrite.
Opcode = tuple[str, int, int, int, int]


class AuditView(Protocol):
    """What the record reads of the audit (``audit.DynamicAudit``, which imports this
    module when it runs)."""

    audit: AuditRun
    flags: dict[str, Any]
    tree: Path
    copy: Path | None
    line_maps: dict[str, Sequence[Opcode]]
    switches: dict[str, object]


def record(audit: AuditView, targets: list[Target], measured: list[Measured],
           problems: list[str], settings: CompileSettings, rewritten: bool) -> DynamicRecord:
    """The ``dynamic`` section for ``audit``."""
    import torch

    labels = _Labels(audit)
    rows = [_target_row(m, labels) for m in measured]
    breaks = _dedup([(m["target"].name, m["original"]) for m in measured], labels)
    document: DynamicRecord = {
        "torch": torch.__version__, "settings": settings.describe(),
        "targets": rows, "breaks": breaks, "no_target": problems,
        "totals": _totals(rows),
        "before_after": _before_after(audit, measured, labels) if rewritten else None,
        "what_if": _what_if(measured, labels) if audit.flags.get("what_if") else None,
        "switches": _with_switches(audit.switches, measured, labels, rewritten)
        if audit.switches else None,
    }
    return document


class _Labels:
    """Frames ("abs/path.py:LINE") as report locations relative to the project root; a
    frame in the rewritten copy is named by its original file, marked ``rewritten``."""

    def __init__(self, audit: AuditView):
        self.root, self.tree, self.copy = audit.audit.root.resolve(), audit.tree, audit.copy
        self.line_maps = audit.line_maps

    def frame(self, frame: str | None) -> dict[str, Any] | None:
        """``{file, line, source, tree}``; a rewritten file's line is mapped back to the
        original file's (``rewritten_line`` keeps it), so keys match across trees."""
        if not frame or ":" not in frame:
            return None
        path, _, line = frame.rpartition(":")
        if not line.isdigit():
            return None
        resolved = Path(os.path.abspath(path))
        label, tree = self._label(resolved)
        found: dict[str, Any] = {"file": label, "line": int(line),
                                 "source": source_line(str(resolved), int(line)),
                                 "tree": tree}
        if str(resolved) in self.line_maps:
            found["rewritten_line"] = int(line)
            found["line"] = original_line(self.line_maps[str(resolved)], int(line))
        return found

    def key(self, reason: BreakReason) -> str:
        """``GB0170@model.py:12``: what identifies a break across targets."""
        frame = self.frame(reason.frame)
        site = f"{frame['file']}:{frame['line']}" if frame else "?"
        return f"{reason.gb_id or reason.reason}@{site}"

    def _label(self, path: Path) -> tuple[str, str]:
        if self.copy is not None and self.copy in path.parents:
            return _relative(self.tree / path.relative_to(self.copy), self.root), "rewritten"
        if self.tree in path.parents:
            return _relative(path, self.root), "original"
        return path.as_posix(), "other"


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _target_row(measured: Measured, labels: _Labels) -> dict[str, Any]:
    probe: ProbeResult = measured["original"]
    row: dict[str, Any] = {"name": measured["target"].name, "error": _error(probe)}
    if row["error"]:
        return row
    report = _breaks(probe)
    row.update({"graphs": report.graph_count, "breaks": report.breaks,
                "fullgraph": probe.fullgraph_ok, "fullgraph_error": probe.fullgraph_error,
                "skipped_frames": report.skipped_frames,
                "recompilations": probe.recompilations, "input_sets": probe.input_sets,
                "compile_seconds": round(probe.compile_seconds, 3),
                "outputs_equal": _equal(probe.eager, probe.compiled)})
    return row


def _breaks(probe: ProbeResult) -> BreakReport:
    """The breaks a probe counted (one without an error ran compiled, so it has them)."""
    assert probe.compiled is not None and probe.compiled.breaks is not None
    return probe.compiled.breaks


def _error(probe: ProbeResult) -> str | None:
    if probe.failure is not None:
        return f"{probe.failure.kind.value}: {probe.failure.message.splitlines()[-1][:300]}"
    for label, run in (("eager", probe.eager), ("compiled", probe.compiled)):
        if run is not None and run.failure is not None:
            return f"{label} run {run.failure.kind.value}: {run.failure.message[-300:]}"
    if probe.eager is not None and probe.eager.exception is not None:
        return f"eager run raised {probe.eager.exception.describe()}"
    return None


def _equal(expected: RunResult | None, actual: RunResult | None,
           printed: bool = True, bitwise: bool = False) -> bool | None:
    """Whether ``actual`` observed what ``expected`` did (printed output included or not;
    ``bitwise``: the exact comparison the rule tests use, else the oracle's tolerances)."""
    if expected is None or actual is None or actual.observed is None and not actual.exception:
        return None
    differences = differ(expected, actual, cmp.CompareOptions(bitwise=bitwise))
    if not printed:
        differences = [d for d in differences if not str(d.path).startswith(_PRINTED)]
    return not differences


def _dedup(runs: list[tuple[str, ProbeResult]], labels: _Labels) -> list[dict[str, Any]]:
    """Breaks of every target merged by (GB id, site), most frequent first."""
    merged: dict[str, dict[str, Any]] = {}
    for target, probe in runs:
        if probe.compiled is None or probe.compiled.breaks is None:
            continue
        for reason in probe.compiled.breaks.reasons:
            key, frame = labels.key(reason), labels.frame(reason.frame)
            if key not in merged:
                entry = registry().get(reason.gb_id or "") or {}
                merged[key] = {"key": key, "gb_id": reason.gb_id, "gb_type": reason.gb_type,
                               "reason": reason.reason, "detail": reason.detail,
                               "explanation": entry.get("Explanation", ""),
                               "hints": list(entry.get("Hints", [])), "frame": frame,
                               "count": 0, "targets": [], "finding": None}
            merged[key]["count"] += reason.count
            if target not in merged[key]["targets"]:
                merged[key]["targets"].append(target)
    return sorted(merged.values(), key=lambda b: (-b["count"], b["key"]))


def _totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    ran = [r for r in rows if not r["error"]]
    return {"targets": len(rows), "failed": len(rows) - len(ran),
            "breaking": sum(1 for r in ran if r["breaks"]),
            "breaks": sum(r["breaks"] for r in ran), "graphs": sum(r["graphs"] for r in ran),
            "fullgraph_ok": sum(1 for r in ran if r["fullgraph"])}


def _counts(probe: ProbeResult) -> dict[str, Any]:
    report = _breaks(probe)
    return {"breaks": report.breaks, "graphs": report.graph_count,
            "fullgraph": probe.fullgraph_ok}


def _before_after(audit: AuditView, measured: list[Measured],
                  labels: _Labels) -> dict[str, Any]:
    rows = []
    for found in measured:
        before, after = found["original"], found["rewritten"]
        error = _error(before) or _error(after)
        row: dict[str, Any] = {"name": found["target"].name, "error": error}
        if not error:
            equal = [_equal(before.eager, after.eager), _equal(before.eager, after.compiled)]
            row.update({"before": _counts(before), "after": _counts(after),
                        "outputs_equal": None if None in equal else all(equal),
                        "latency_ratio": _ratio(before, after),
                        "latency": {"before": before.latency, "after": after.latency}})
        rows.append(row)
    ran = [r for r in rows if not r["error"]]
    total: dict[str, Any] = {side: {"breaks": sum(r[side]["breaks"] for r in ran),
                    "graphs": sum(r[side]["graphs"] for r in ran),
                    "fullgraph_ok": sum(1 for r in ran if r[side]["fullgraph"])}
             for side in ("before", "after")}
    removed = total["before"]["breaks"] - total["after"]["breaks"]
    total.update({"targets": len(ran), "outputs_equal": sum(1 for r in ran
                                                             if r["outputs_equal"]),
                  "removed_share": round(removed / total["before"]["breaks"], 4)
                  if total["before"]["breaks"] else 0.0})
    remaining = _dedup([(m["target"].name, m["rewritten"]) for m in measured], labels)
    return {"rules": [Path(p).name for p in audit.audit.packs], "targets": rows,
            "totals": total, "remaining": remaining}


def _ratio(before: ProbeResult, after: ProbeResult) -> float | None:
    if not (before.latency and after.latency) or not before.latency["compiled"]:
        return None
    return round(after.latency["compiled"] / before.latency["compiled"], 3)


def _what_if(measured: list[Measured], labels: _Labels) -> dict[str, Any]:
    runs, tree = [], "original"
    for found in measured:
        tree = found.get("what_if_tree", tree)
        base = found[tree]
        reference = found["original"].eager
        for switch, value, probe in found.get("what_if", []):
            runs.append(_what_if_run(found["target"].name, switch, value, base, probe,
                                     reference, labels))
    return {"tree": tree, "runs": runs, "switches": _by_switch(runs)}


def _keys(probe: ProbeResult, labels: _Labels) -> dict[str, int]:
    return {labels.key(r): r.count for r in _breaks(probe).reasons}


def _what_if_run(target: str, switch: str, value: str, base: ProbeResult,
                 probe: ProbeResult, reference: RunResult | None,
                 labels: _Labels) -> dict[str, Any]:
    run: dict[str, Any] = {
        "target": target, "switch": switch, "value": value,
        "error": _error(probe) if probe.compiled is not None or probe.failure else None}
    if run["error"] or probe.compiled is None or probe.compiled.breaks is None:
        run["error"] = run["error"] or "no measurement"
        return run
    before, after = _keys(base, labels), _keys(probe, labels)
    run.update({"breaks_before": _breaks(base).breaks,
                "breaks_after": probe.compiled.breaks.breaks,
                "graphs_after": probe.compiled.breaks.graph_count,
                "removed": sorted(k for k in before if k not in after),
                "reduced": sorted(f"{k}: {before[k]} -> {after[k]}" for k in before
                                  if k in after and after[k] < before[k]),
                "added": sorted(k for k in after if k not in before),
                "outputs_equal": _equal(reference, probe.compiled, printed=False),
                "printed_equal": _printed_equal(reference, probe.compiled)})
    return run


def _printed_equal(reference: RunResult | None, compiled: RunResult) -> bool | None:
    if reference is None or reference.observed is None or compiled.observed is None:
        return None
    return reference.observed.get("printed") == compiled.observed.get("printed")


def _by_switch(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per switch: targets tried, breaks removed, targets left without a break, and whether
    every run kept the outputs."""
    found: dict[str, dict[str, Any]] = {}
    for run in runs:
        entry = found.setdefault(run["switch"], {"switch": run["switch"], "value": run["value"],
                                                 "targets": 0, "breaks_removed": 0,
                                                 "targets_fixed": 0, "outputs_equal": True})
        entry["targets"] += 1
        if run.get("error"):
            entry["outputs_equal"] = False
            continue
        entry["breaks_removed"] += max(0, run["breaks_before"] - run["breaks_after"])
        entry["targets_fixed"] += run["breaks_after"] == 0
        entry["outputs_equal"] = entry["outputs_equal"] and bool(run["outputs_equal"])
    return sorted(found.values(), key=lambda e: -e["breaks_removed"])


# -- --dynamo-config / --dynamic-sizes: every target in two modes ------------------------------

MODES = ("default", "switches")
# Which mode removes a break site of the original code under the default settings.
REMOVED_BY = ("rules", "switches", "either", "together", "neither", "new")


def _with_switches(switches: dict[str, object], measured: list[Measured], labels: _Labels,
                   rewritten: bool) -> dict[str, Any]:
    """Breaks in each cell (tree x mode), per target and in total; per break site, which
    mode removes it; and whether the rewrite stays exact in each mode."""
    trees = ["original", "rewritten"] if rewritten else ["original"]
    cells = [_cells(m, trees) for m in measured]
    rows = [_mode_row(m, probes, trees) for m, probes in zip(measured, cells)]
    ran = [r for r in rows if not r["error"]]
    totals: dict[str, Any] = {"targets": len(ran), "failed": len(rows) - len(ran)}
    for field in ("breaks", "graphs"):
        totals[field] = {mode: {tree: sum(r[field][mode][tree] for r in ran) for tree in trees}
                         for mode in MODES}
    for field, column in (("breaking", "breaks"), ("fullgraph_ok", "fullgraph")):
        totals[field] = {mode: {tree: sum(1 for r in ran if r[column][mode][tree])
                                for tree in trees} for mode in MODES}
    totals["compiled_equal"] = {mode: sum(1 for r in ran if r["outputs"][mode]["compiled"])
                                for mode in MODES}
    totals["raising"] = {mode: {tree: sum(1 for r in ran if r["raises"][mode][tree])
                                for tree in trees} for mode in MODES}
    if rewritten:
        totals["exact"] = {mode: sum(1 for r in ran if r["exact"][mode]) for mode in MODES}
    settings = next((m["switched_settings"].describe() for m in measured
                     if "switched_settings" in m), "")
    sites = _sites(measured, cells, labels, trees)
    found = {"dynamo_config": _plain(switches), "settings": settings, "trees": trees,
             "targets": rows, "totals": totals, "sites": sites,
             "removed_by": {name: sum(1 for s in sites if s["removed_by"] == name)
                            for name in REMOVED_BY
                            if rewritten or name in ("switches", "neither", "new")}}
    return found


def _plain(switches: dict[str, object]) -> dict[str, object]:
    """The switches as JSON holds them (others as their repr)."""
    plain = (bool, int, float, str, type(None))
    return {k: v if isinstance(v, plain) else repr(v) for k, v in switches.items()}


def _cells(measured: Measured, trees: list[str]) -> dict[str, dict[str, ProbeResult]]:
    """``{mode: {tree: probe}}`` for one target."""
    return {"default": {tree: measured[tree] for tree in trees},
            "switches": {tree: measured["switched"][tree] for tree in trees}}


def _mode_row(measured: Measured, cells: dict[str, dict[str, ProbeResult]],
              trees: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"name": measured["target"].name, "error": next(
        (f"{mode}, {tree}: {error}" for mode in MODES for tree in trees
         if (error := _error(cells[mode][tree]))), None)}
    if row["error"]:
        return row
    for field, read in (("breaks", lambda p: _breaks(p).breaks),
                        ("graphs", lambda p: _breaks(p).graph_count),
                        ("fullgraph", lambda p: p.fullgraph_ok)):
        row[field] = {mode: {tree: read(cells[mode][tree]) for tree in trees}
                      for mode in MODES}
    # A compiled run that raises where the eager one did not: under the switches Dynamo may
    # fail on a guard of an unbacked value instead of breaking the graph (pytorch#180596),
    # so a program run with them stops there.
    row["raises"] = {mode: {tree: _compile_error(cells[mode][tree]) for tree in trees}
                     for mode in MODES}
    reference = measured["original"].eager  # what the original code computes eagerly
    row["outputs"] = {}
    for mode in MODES:
        original = cells[mode]["original"]
        outputs: dict[str, bool | None] = {"compiled": _equal(reference, original.compiled)}
        if "rewritten" in trees:
            after = cells[mode]["rewritten"]
            outputs["rewritten_eager"] = _equal(original.eager, after.eager, bitwise=True)
            outputs["rewritten_compiled"] = _equal(reference, after.compiled)
        row["outputs"][mode] = outputs
    if "rewritten" in trees:
        # Exact in a mode: eagerly bit for bit, and compiled as the original computes
        # eagerly, or failing as the original's compiled run fails (the same exception
        # type: the compiler stops on both alike, which the rewrite did not change).
        row["exact"] = {mode: _all(row["outputs"][mode]["rewritten_eager"], _compiled_exact(
            row["outputs"][mode]["rewritten_compiled"], cells[mode]["original"].compiled,
            cells[mode]["rewritten"].compiled)) for mode in MODES}
    return row


def _compiled_exact(matches: bool | None, before: RunResult | None,
                    after: RunResult | None) -> bool | None:
    """True when the rewritten compiled run ``matches`` the original's eager one, or when it
    raises an exception of the same type as the original's compiled run; else ``matches``
    (False, or None when unknown)."""
    fail_alike = (before is not None and after is not None and before.exception is not None
                  and after.exception is not None
                  and before.exception.type == after.exception.type)
    return True if matches or fail_alike else matches


def _compile_error(probe: ProbeResult) -> str | None:
    """The exception of the probe's compiled run when its eager run raised none."""
    compiled, eager = probe.compiled, probe.eager
    if compiled is None or compiled.exception is None:
        return None
    if eager is not None and eager.exception is not None:
        return None  # the program itself raises: compiled follows it
    return compiled.exception.describe()


def _all(*values: bool | None) -> bool | None:
    return None if None in values else all(values)


def _sites(measured: list[Measured], cells: list[dict[str, dict[str, ProbeResult]]],
           labels: _Labels, trees: list[str]) -> list[dict[str, Any]]:
    """Every break site seen in some cell, with its count in each cell (summed over the
    targets) and which mode removes it (``removed_by``)."""
    sites: dict[str, dict[str, Any]] = {}
    for found, probes in zip(measured, cells):
        for mode in MODES:
            for tree in trees:
                probe = probes[mode][tree]
                if _error(probe):
                    continue
                for reason in _breaks(probe).reasons:
                    key = labels.key(reason)
                    site = sites.setdefault(key, {
                        "key": key, "gb_id": reason.gb_id, "gb_type": reason.gb_type,
                        "reason": reason.reason, "frame": labels.frame(reason.frame),
                        "targets": [],
                        "count": {m: {t: 0 for t in trees} for m in MODES}})
                    site["count"][mode][tree] += reason.count
                    if found["target"].name not in site["targets"]:
                        site["targets"].append(found["target"].name)
    for site in sites.values():
        site["removed_by"] = removed_by(site["count"])
    order = {name: i for i, name in enumerate(REMOVED_BY)}
    return sorted(sites.values(), key=lambda s: (order[s["removed_by"]],
                                                 -s["count"]["default"]["original"], s["key"]))


def removed_by(count: dict[str, dict[str, int]]) -> str:
    """Which mode removes a site: ``rules`` (the rewrite alone), ``switches`` (the switches
    alone), ``either`` (each alone), ``together`` (only the rewrite with the switches),
    ``neither``; ``new`` for a site the original code does not break at by default."""
    if not count["default"]["original"]:
        return "new"
    by_switches = not count["switches"]["original"]
    if "rewritten" not in count["default"]:
        return "switches" if by_switches else "neither"
    by_rules = not count["default"]["rewritten"]
    if by_rules or by_switches:
        return "either" if by_rules and by_switches else "rules" if by_rules else "switches"
    return "neither" if count["switches"]["rewritten"] else "together"


def original_line(opcodes: Sequence[Opcode], line: int) -> int:
    """The line of the original file that rewritten ``line`` comes from: itself moved, in
    unchanged code, else the first line of the code a rewrite replaced."""
    for tag, i1, _, j1, j2 in opcodes:
        if j1 <= line - 1 < j2:
            return i1 + (line - 1 - j1) + 1 if tag == "equal" else i1 + 1
    return line


def source_line(path: str, line: int) -> str:
    """The stripped source line (empty when unknown)."""
    return linecache.getline(path, line).strip()
