"""Present results: human text on stderr, diffs on stdout, JSON and SARIF for machines."""

from __future__ import annotations

import json
import sys
from collections import Counter

from . import __version__
from .rules import Rule
from .runner import FileResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def error_line(result: FileResult) -> str:
    """``path:line:col: message`` for a failed file."""
    where = result.path
    if result.line:
        where += f":{result.line}"
        if result.col:
            where += f":{result.col}"
    return f"error: {where}: {result.error}"


def summary(results: list[FileResult]) -> dict[str, int]:
    """Counts of files by outcome and the number of edits."""
    counts = Counter(r.status for r in results)
    return {"files": len(results), "changed": counts["changed"],
            "unchanged": counts["unchanged"], "generated": counts["generated"],
            "errors": counts["error"], "edits": sum(len(r.edits) for r in results)}


def print_text(results: list[FileResult], mode: str, quiet: bool) -> None:
    """Black-style report: one line per changed or failed file, then a summary."""
    verb = {"check": "would rewrite", "diff": "would rewrite", "out": "rewrote"}.get(
        mode, "rewrote")
    for result in results:
        if result.diff:
            sys.stdout.write(result.diff)
        if result.status == "error":
            print(error_line(result), file=sys.stderr)
        elif result.status == "changed" and not quiet:
            print(f"{verb} {result.path} ({_plural(len(result.edits), 'edit')})",
                  file=sys.stderr)
        if not quiet:
            for note in result.notes:
                print(f"note: {result.path}:{note['line']}:{note['col']}: {note['rule']}: "
                      f"{note['message']}", file=sys.stderr)
    if quiet:
        return
    counts = summary(results)
    would = "would be " if mode in ("check", "diff") else ""
    parts = [f"{_plural(counts['changed'], 'file')} {would}rewritten "
             f"({_plural(counts['edits'], 'edit')})",
             f"{_plural(counts['unchanged'], 'file')} {would}left unchanged"]
    if counts["generated"]:
        parts.append(f"{counts['generated']} @generated skipped")
    if counts["errors"]:
        parts.append(f"{_plural(counts['errors'], 'file')} failed")
    print(", ".join(parts) + ".", file=sys.stderr)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def to_json(results: list[FileResult], mode: str) -> str:
    """One record per edit and per error, plus a summary."""
    edits = [{"file": r.path, **e} for r in results for e in r.edits]
    errors = [{"file": r.path, "line": r.line, "col": r.col, "message": r.error}
              for r in results if r.status == "error"]
    notes = [{"file": r.path, **n} for r in results for n in r.notes]
    document = {"version": __version__, "mode": mode, "summary": summary(results),
                "edits": edits, "errors": errors, "notes": notes}
    return json.dumps(document, indent=2)


def to_sarif(results: list[FileResult], rules: list[Rule]) -> str:
    """SARIF 2.1.0: one result per edit (with its fix) and one per file error."""
    used = {e["rule"] for r in results for e in r.edits}
    descriptors = [{"id": rule.id, "shortDescription": {"text": rule.description},
                    "properties": {"safety": rule.safety}}
                   for rule in rules if rule.id in used]
    descriptors.append({"id": "eqrewrite-error",
                        "shortDescription": {"text": "file could not be processed"}})
    sarif_results = []
    for result in results:
        location = {"physicalLocation": {"artifactLocation": {"uri": result.path}}}
        for edit in result.edits:
            region = {"startLine": edit["start"]["line"], "startColumn": edit["start"]["col"],
                      "endLine": edit["end"]["line"], "endColumn": edit["end"]["col"]}
            sarif_results.append({
                "ruleId": edit["rule"], "level": "note",
                "message": {"text": f"{edit['before']} -> {edit['after']}"},
                "locations": [{"physicalLocation": {**location["physicalLocation"],
                                                    "region": region}}],
                "fixes": [{"description": {"text": f"rewrite with {edit['rule']}"},
                           "artifactChanges": [{**location["physicalLocation"],
                                                "replacements": [{
                                                    "deletedRegion": region,
                                                    "insertedContent": {"text": edit["after"]},
                                                }]}]}] if edit["round"] == 1 else [],
            })
        if result.status == "error":
            region = {"startLine": max(result.line, 1)}
            sarif_results.append({
                "ruleId": "eqrewrite-error", "level": "error",
                "message": {"text": result.error},
                "locations": [{"physicalLocation": {**location["physicalLocation"],
                                                    "region": region}}]})
    run = {"tool": {"driver": {"name": "eqrewrite", "version": __version__,
                               "rules": descriptors}},
           "results": sarif_results}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
