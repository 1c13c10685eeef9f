"""Present results: human text on stderr, diffs on stdout, JSON and SARIF for machines."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

from .. import __version__
from ..matching.rules import Rule
from .results import EditRecord, FileResult, Mode, Status

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
    return {"files": len(results), "changed": counts[Status.CHANGED],
            "unchanged": counts[Status.UNCHANGED], "generated": counts[Status.GENERATED],
            "skipped": counts[Status.SKIPPED], "errors": counts[Status.ERROR],
            "edits": sum(len(r.edits) for r in results)}


def print_text(results: list[FileResult], mode: Mode, quiet: bool, diffs: bool = True) -> None:
    """Black-style report on stderr: a line per changed, skipped or failed file, a summary.

    Diffs go to stdout (unless ``diffs`` is False: stdout then belongs to a JSON report).
    """
    for result in results:
        if result.diff and diffs:
            sys.stdout.write(result.diff)
        if result.status is Status.ERROR:
            print(error_line(result), file=sys.stderr)
        elif result.status is Status.SKIPPED and not quiet:
            print(f"skipped {result.path}: {result.error}", file=sys.stderr)
        elif result.status is Status.CHANGED and not quiet:
            print(f"{_done(result, mode)} ({_plural(len(result.edits), 'edit')})",
                  file=sys.stderr)
        if not quiet:
            for note in result.notes:
                print(f"note: {result.path}:{note.line}:{note.col}: {note.rule}: "
                      f"{note.message}", file=sys.stderr)
    if quiet:
        return
    counts = summary(results)
    would = "would be " if mode.reports_only else ""
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


def _done(result: FileResult, mode: Mode) -> str:
    """What happened to a changed file, naming the file that was written."""
    if mode.reports_only:
        return f"would rewrite {result.path}"
    if mode is Mode.OUT:
        return f"wrote {result.output}" if result.written else f"{result.output} is up to date"
    return f"rewrote {result.path}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def to_json(results: list[FileResult], mode: Mode,
            steps: dict[str, dict[str, Any]] | None = None) -> str:
    """The whole run as one JSON document: a record per file, per edit and per error.

    ``mode`` says what the run may write (``write``: sources in place, ``out``: the
    ``--out`` tree, ``check``/``diff``: nothing); each file's ``written`` says whether it
    was. Diffs (``--diff``) are inside the file records; ``steps`` holds plugin records.
    """
    edits = [{"file": r.path, **e.to_json()} for r in results for e in r.edits]
    errors = [{"file": r.path, "line": r.line, "col": r.col, "message": r.error}
              for r in results if r.status is Status.ERROR]
    notes = [{"file": r.path, **n.to_json()} for r in results for n in r.notes]
    document: dict[str, Any] = {
        "version": __version__, "mode": str(mode), "summary": summary(results),
        "files": [_file_record(r) for r in results], "edits": edits, "errors": errors,
        "notes": notes}
    if steps:
        document["steps"] = steps
    return json.dumps(document, indent=2)


def _file_record(result: FileResult) -> dict[str, Any]:
    record: dict[str, Any] = {"path": result.path, "status": str(result.status),
                              "written": result.written, "edits": len(result.edits)}
    if result.output is not None:
        record["output"] = result.output
    if result.status is Status.SKIPPED:
        record["reason"] = result.error
    elif result.status is Status.ERROR:
        record["error"] = result.error
    if result.diff:
        record["diff"] = result.diff
    return record


def to_sarif(results: list[FileResult], rules: list[Rule]) -> str:
    """SARIF 2.1.0: one result per edit, with its fix. Files that could not be processed
    (or were skipped) are tool execution notifications of the run's invocation, which is
    unsuccessful when any file failed."""
    used = {e.rule for r in results for e in r.edits}
    descriptors = [{"id": rule.id, "shortDescription": {"text": rule.description},
                    "properties": {"safety": str(rule.safety)}}
                   for rule in rules if rule.id in used]
    invocation = {"executionSuccessful": not any(r.status is Status.ERROR for r in results),
                  "toolExecutionNotifications": [
                      _notification(r) for r in results
                      if r.status in (Status.ERROR, Status.SKIPPED)]}
    run = {"tool": {"driver": {"name": "eqrewrite", "version": __version__,
                               "rules": descriptors}},
           "invocations": [invocation],
           "results": [_sarif_result(r.path, edit) for r in results for edit in r.edits]}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)


def _sarif_result(path: str, edit: EditRecord) -> dict[str, Any]:
    location = {"artifactLocation": {"uri": path}}
    region = {"startLine": edit.start_line, "startColumn": edit.start_col,
              "endLine": edit.end_line, "endColumn": edit.end_col}
    fixes = [{"description": {"text": f"rewrite with {edit.rule}"},
              "artifactChanges": [{**location, "replacements": [{
                  "deletedRegion": region, "insertedContent": {"text": edit.after}}]}]}]
    return {"ruleId": edit.rule, "level": "note",
            "message": {"text": f"{edit.before} -> {edit.after}"},
            "locations": [{"physicalLocation": {**location, "region": region}}],
            # Later rounds rewrite text the first round produced: no fix for the original.
            "fixes": fixes if edit.round == 1 else []}


def _notification(result: FileResult) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": result.path}}
    if result.line:
        region = location["region"] = {"startLine": result.line}
        if result.col:
            region["startColumn"] = result.col
    return {"level": "error" if result.status is Status.ERROR else "warning",
            "message": {"text": result.error or str(result.status)},
            "locations": [{"physicalLocation": location}]}
