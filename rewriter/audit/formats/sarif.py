"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One result per finding: ``ruleId`` is the pattern id (stable), the location is the site's
region relative to the repository root (``%SRCROOT%``), ``partialFingerprints`` carries the
finding's stable id (so code scanning tracks it across commits, as baselines do), and a
finding a rule fixes carries that edit as a ``fix``. Breaks the dynamic audit observed at no
finding's site are results too, under their torch registry id. Each rule has help text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..catalogue import PATTERNS, Pattern
from . import why_text

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "eqrewriteFindingId/v1"
INFORMATION_URI = "https://github.com/eqrewrite/eqrewrite#the-graph-break-audit"


def to_sarif(document: dict[str, Any], root: Path) -> str:
    patterns = sorted({f["pattern"] for f in document["findings"]} | set(document["patterns"]))
    rules = [_pattern_rule(PATTERNS[p]) for p in patterns]
    results = [_finding_result(f, patterns.index(f["pattern"])) for f in document["findings"]]
    dynamic = document.get("dynamic") or {}
    removed = _removed_by(dynamic)
    for finding, result in zip(document["findings"], results):
        if finding["id"] in removed:
            result["properties"]["removedBy"] = removed[finding["id"]]
    unmatched = [b for b in dynamic.get("breaks", []) if not b.get("finding")
                 and (b.get("frame") or {}).get("tree") == "original"]
    for observed in unmatched:
        rule_id = observed.get("gb_id") or "GB-unknown"
        if rule_id not in [r["id"] for r in rules]:
            rules.append(_break_rule(observed, rule_id))
        results.append(_break_result(observed, [r["id"] for r in rules].index(rule_id)))
        if observed["key"] in removed:
            results[-1]["properties"] = {"removedBy": removed[observed["key"]]}
    run = {"tool": {"driver": {"name": "eqrewrite-audit", "version": document["tool"]["version"],
                               "informationUri": INFORMATION_URI, "rules": rules}},
           "automationDetails": {"id": "eqrewrite-audit/"},
           "invocations": [_invocation(document)], "results": results,
           "columnKind": "unicodeCodePoints"}
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _removed_by(dynamic: dict[str, Any]) -> dict[str, list[str]]:
    """With --dynamo-config: what removes the breaks observed at each finding and at each
    break site (``rules``, ``switches``, ``either``, ``together``, ``neither``), by finding
    id and by break key."""
    switches = dynamic.get("switches")
    if not switches:
        return {}
    by_key = {site["key"]: site["removed_by"] for site in switches["sites"]}
    found: dict[str, list[str]] = {}
    for observed in dynamic.get("breaks", []):
        attribution = by_key.get(observed["key"])
        if attribution is None:
            continue
        for name in (observed["key"], observed.get("finding")):
            if name and attribution not in found.setdefault(name, []):
                found[name].append(attribution)
    return found


def _pattern_rule(pattern: Pattern) -> dict[str, Any]:
    settings = "".join(f"\n- `torch._dynamo.config.{s.name}` = {s.value}: {s.effect}"
                       + (f" ({s.caveat})" if s.caveat else "") for s in pattern.settings)
    markdown = (f"{pattern.help}\n\nDynamo reports it as {', '.join(pattern.gb_ids)}.\n\n"
                + (f"Dynamo settings that avoid it:{settings}\n\n" if settings else "")
                + f"What to do: {pattern.advice}")
    return {"id": pattern.id, "name": _camel(pattern.id),
            "shortDescription": {"text": pattern.title},
            "fullDescription": {"text": pattern.help},
            "help": {"text": _plain(markdown), "markdown": markdown},
            "helpUri": f"{INFORMATION_URI}-{pattern.id}",
            "defaultConfiguration": {"level": "warning"},
            "properties": {"tags": ["torch.compile", "graph-break", "performance"],
                           "precision": "high", "problem.severity": "warning",
                           "gb_ids": list(pattern.gb_ids)}}


def _break_rule(observed: dict[str, Any], rule_id: str) -> dict[str, Any]:
    text = observed.get("gb_type") or observed.get("reason") or "graph break"
    hints = " ".join(observed.get("hints", []))
    body = (observed.get("detail") or observed.get("explanation") or text) + (
        f" Hints: {hints}" if hints else "")
    return {"id": rule_id, "name": _camel(text), "shortDescription": {"text": text},
            "fullDescription": {"text": body}, "help": {"text": body, "markdown": body},
            "defaultConfiguration": {"level": "warning"},
            "properties": {"tags": ["torch.compile", "graph-break", "observed"],
                           "precision": "very-high"}}


def _region(start_line: int, start_col: int, end_line: int, end_col: int) -> dict[str, Any]:
    return {"startLine": start_line, "startColumn": start_col, "endLine": end_line,
            "endColumn": end_col}


def _artifact(file: str) -> dict[str, Any]:
    return {"uri": file, "uriBaseId": "%SRCROOT%"}


def _finding_result(finding: dict[str, Any], index: int) -> dict[str, Any]:
    region = _region(finding["line"], finding["column"], finding["end_line"],
                     finding["end_column"])
    message = f"{PATTERNS[finding['pattern']].title}: `{finding['code']}` in " \
              f"{finding['function']}. " + _remedy(finding)
    result = {"ruleId": finding["pattern"], "ruleIndex": index,
              "level": "warning" if finding["confidence"] == "certain" else "note",
              "message": {"text": message},
              "locations": [{"physicalLocation": {"artifactLocation": _artifact(finding["file"]),
                                                  "region": region}}],
              "partialFingerprints": {FINGERPRINT: finding["id"]},
              "properties": {"fix": finding["fix"], "confidence": finding["confidence"],
                             "function": finding["function"]}}
    if finding.get("observed"):
        result["properties"]["observed"] = finding["observed"]
    rewrite = finding.get("rewrite")
    if rewrite:
        deleted = _region(rewrite["start"]["line"], rewrite["start"]["column"],
                          rewrite["end"]["line"], rewrite["end"]["column"])
        helpers = ", ".join(rewrite["helpers"])
        note = f" (calls {helpers}, which `eqrewrite --rules` inserts after the imports)" \
            if helpers else ""
        result["fixes"] = [{"description": {"text": f"rewrite with {finding['rule']}{note}"},
                            "artifactChanges": [{"artifactLocation": _artifact(finding["file"]),
                                                 "replacements": [{
                                                     "deletedRegion": deleted,
                                                     "insertedContent": {
                                                         "text": rewrite["after"]}}]}]}]
    return result


def _remedy(finding: dict[str, Any]) -> str:
    if finding["fix"] == "rule":
        return f"Rule `{finding['rule']}` rewrites it (eqrewrite --rules)."
    text = why_text(finding)
    settings = ", ".join(f"{s['name']}={s['value']}" for s in finding["settings"])
    return text + (f". Dynamo setting: {settings}." if settings else "")


def _break_result(observed: dict[str, Any], index: int) -> dict[str, Any]:
    frame = observed["frame"]
    text = (f"{observed.get('gb_type') or observed.get('reason')} (seen {observed['count']}x in "
            f"{', '.join(observed['targets'])}): {observed.get('detail', '')}")
    return {"ruleId": observed.get("gb_id") or "GB-unknown", "ruleIndex": index,
            "level": "warning", "message": {"text": text},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(frame["file"]),
                "region": {"startLine": frame["line"]}}}],
            "partialFingerprints": {FINGERPRINT: observed["key"]}}


def _invocation(document: dict[str, Any]) -> dict[str, Any]:
    notes = [{"level": "error", "message": {"text": e["message"]},
              "locations": [{"physicalLocation": {
                  "artifactLocation": _artifact(e["file"]),
                  **({"region": {"startLine": e["line"]}} if e["line"] else {})}}]}
             for e in document["errors"]]
    return {"executionSuccessful": not document["errors"], "toolExecutionNotifications": notes}


def _camel(text: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in text).split()
    return "".join(w[:1].upper() + w[1:] for w in words) or "GraphBreak"


def _plain(markdown: str) -> str:
    return markdown.replace("`", "")
