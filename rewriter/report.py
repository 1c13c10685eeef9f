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
            "skipped": counts["skipped"], "errors": counts["error"],
            "edits": sum(len(r.edits) for r in results)}


def print_text(results: list[FileResult], mode: str, quiet: bool, diffs: bool = True) -> None:
    """Black-style report on stderr: a line per changed, skipped or failed file, a summary.

    Diffs go to stdout (unless ``diffs`` is False: stdout then belongs to a JSON report).
    """
    for result in results:
        if result.diff and diffs:
            sys.stdout.write(result.diff)
        if result.status == "error":
            print(error_line(result), file=sys.stderr)
        elif result.status == "skipped" and not quiet:
            print(f"skipped {result.path}: {result.error}", file=sys.stderr)
        elif result.status == "changed" and not quiet:
            print(f"{_done(result, mode)} ({_plural(len(result.edits), 'edit')})",
                  file=sys.stderr)
    if quiet:
        return
    counts = summary(results)
    would = "would be " if mode in ("check", "diff") else ""
    parts = [f"{_plural(counts['changed'], 'file')} {would}rewritten "
             f"({_plural(counts['edits'], 'edit')})",
             f"{_plural(counts['unchanged'], 'file')} {would}left unchanged"]
    if counts["generated"]:
        parts.append(f"{counts['generated']} @generated skipped")
    if counts["skipped"]:
        parts.append(f"{_plural(counts['skipped'], 'file')} skipped")
    if counts["errors"]:
        parts.append(f"{_plural(counts['errors'], 'file')} failed")
    print(", ".join(parts) + ".", file=sys.stderr)


def _done(result: FileResult, mode: str) -> str:
    """What happened to a changed file, naming the file that was written."""
    if mode in ("check", "diff"):
        return f"would rewrite {result.path}"
    if mode == "out":
        return f"wrote {result.output}" if result.written else f"{result.output} is up to date"
    return f"rewrote {result.path}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def to_json(results: list[FileResult], mode: str, steps: dict[str, dict] | None = None) -> str:
    """The whole run as one JSON document: a record per file, per edit and per error.

    ``mode`` says what the run may write (``write``: sources in place, ``out``: the
    ``--out`` tree, ``check``/``diff``: nothing); each file's ``written`` says whether it
    was. Diffs (``--diff``) are inside the file records; ``steps`` holds plugin records.
    """
    edits = [{"file": r.path, **e} for r in results for e in r.edits]
    errors = [{"file": r.path, "line": r.line, "col": r.col, "message": r.error}
              for r in results if r.status == "error"]
    document = {"version": __version__, "mode": mode, "summary": summary(results),
                "files": [_file_record(r) for r in results], "edits": edits, "errors": errors}
    if steps:
        document["steps"] = steps
    return json.dumps(document, indent=2)


def _file_record(result: FileResult) -> dict:
    record = {"path": result.path, "status": result.status,
              "written": result.written, "edits": len(result.edits)}
    if result.output is not None:
        record["output"] = result.output
    if result.status == "skipped":
        record["reason"] = result.error
    elif result.status == "error":
        record["error"] = result.error
    if result.diff:
        record["diff"] = result.diff
    return record


def to_sarif(results: list[FileResult], rules: list[Rule]) -> str:
    """SARIF 2.1.0: one result per edit, with its fix. Files that could not be processed
    (or were skipped) are tool execution notifications of the run's invocation, which is
    unsuccessful when any file failed."""
    used = {e["rule"] for r in results for e in r.edits}
    descriptors = [{"id": rule.id, "shortDescription": {"text": rule.description},
                    "properties": {"safety": rule.safety}}
                   for rule in rules if rule.id in used]
    invocation = {"executionSuccessful": not any(r.status == "error" for r in results),
                  "toolExecutionNotifications": [_notification(r) for r in results
                                                 if r.status in ("error", "skipped")]}
    run = {"tool": {"driver": {"name": "eqrewrite", "version": __version__,
                               "rules": descriptors}},
           "invocations": [invocation],
           "results": [_sarif_result(r.path, edit) for r in results for edit in r.edits]}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)


def _sarif_result(path: str, edit: dict) -> dict:
    location = {"artifactLocation": {"uri": path}}
    region = {"startLine": edit["start"]["line"], "startColumn": edit["start"]["col"],
              "endLine": edit["end"]["line"], "endColumn": edit["end"]["col"]}
    fixes = [{"description": {"text": f"rewrite with {edit['rule']}"},
              "artifactChanges": [{**location, "replacements": [{
                  "deletedRegion": region, "insertedContent": {"text": edit["after"]}}]}]}]
    return {"ruleId": edit["rule"], "level": "note",
            "message": {"text": f"{edit['before']} -> {edit['after']}"},
            "locations": [{"physicalLocation": {**location, "region": region}}],
            # Later rounds rewrite text the first round produced: no fix for the original.
            "fixes": fixes if edit["round"] == 1 else []}


def _notification(result: FileResult) -> dict:
    location = {"artifactLocation": {"uri": result.path}}
    if result.line:
        location["region"] = {"startLine": result.line}
        if result.col:
            location["region"]["startColumn"] = result.col
    return {"level": "error" if result.status == "error" else "warning",
            "message": {"text": result.error or result.status},
            "locations": [{"physicalLocation": location}]}
