"""The audit report as one JSON-ready document: stable finding ids, summary, baselines.

Every output format renders this document, and ``schema.json`` (shipped beside this module)
describes it. A finding's id hashes its pattern, its file relative to the project, the
function holding it and its normalised code, plus an occurrence number among identical
sites of that function: never a line number, so a report made after code moved (an import
added above a finding) keeps every id, and a baseline keeps working.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from .. import __version__
from .catalogue import PATTERNS
from .scan import FileAudit

SCHEMA_VERSION = 1
KIND = "eqrewrite-audit"
FIXES = ("rule", "setting", "manual")


class BaselineError(Exception):
    """A baseline file that is not an audit JSON report; the message names the file."""


def assign_ids(findings: list[dict[str, Any]]) -> None:
    """Give every finding its stable ``id`` (in place)."""
    seen: Counter[tuple[str, str, str, str]] = Counter()
    for finding in findings:
        key = (finding["pattern"], finding["file"], finding["function"], finding["code"])
        occurrence = seen[key]
        seen[key] += 1
        text = "\0".join([*key, str(occurrence)])
        finding["id"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build(audits: list[FileAudit], settings: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The document for a static audit (``dynamic`` stays None until a plugin fills it)."""
    findings = [f for audit in audits for f in audit.findings]
    assign_ids(findings)
    errors = [audit.error for audit in audits if audit.error is not None]
    document = {
        "kind": KIND, "schema_version": SCHEMA_VERSION,
        "tool": {"name": "eqrewrite", "version": __version__},
        "settings": settings, "summary": {}, "findings": findings, "errors": errors,
        "patterns": {p: PATTERNS[p].as_dict() for p in sorted({f["pattern"]
                                                               for f in findings})},
        "baseline": None, "dynamic": None,
    }
    document["summary"] = summarise(document, len(audits),
                                    sum(a.suppressed for a in audits), seconds)
    return document


def summarise(document: dict[str, Any], files: int, suppressed: int,
              seconds: float) -> dict[str, Any]:
    """Totals, the share of each kind of fix, and the causes, most frequent first."""
    findings = document["findings"]
    by_fix = Counter(f["fix"] for f in findings)
    causes = Counter(f["pattern"] for f in findings)
    top = [{"pattern": p, "title": PATTERNS[p].title, "count": n,
            **{fix: sum(1 for f in findings if f["pattern"] == p and f["fix"] == fix)
               for fix in FIXES}}
           for p, n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))]
    total = len(findings)
    return {"files": files, "files_with_findings": len({f["file"] for f in findings}),
            "findings": total, "suppressed": suppressed, "errors": len(document["errors"]),
            "by_fix": {fix: by_fix[fix] for fix in FIXES},
            "share": {fix: round(by_fix[fix] / total, 4) if total else 0.0 for fix in FIXES},
            "confidence": dict(sorted(Counter(f["confidence"] for f in findings).items())),
            "causes": top, "seconds": round(seconds, 3)}


def load_baseline(path: Path) -> dict[str, Any]:
    """A previous audit JSON report."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BaselineError(f"{path}: cannot read the baseline: {error.strerror or error}") \
            from None
    except ValueError as error:
        raise BaselineError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(
            data.get("findings"), list):
        raise BaselineError(f"{path}: not an eqrewrite audit JSON report (make one with "
                            "'eqrewrite audit PATH --format json -o FILE')")
    return data


def apply_baseline(document: dict[str, Any], baseline: dict[str, Any], path: str) -> None:
    """Keep only the findings the baseline does not have; record what is known and fixed."""
    old = {f.get("id") for f in baseline["findings"]}
    now = {f["id"] for f in document["findings"]}
    document["findings"] = [f for f in document["findings"] if f["id"] not in old]
    document["baseline"] = {"path": path, "known": len(now & old), "fixed": len(old - now),
                            "new": len(document["findings"])}
    summary = document["summary"]
    document["summary"] = summarise(document, summary["files"], summary["suppressed"],
                                    summary["seconds"])


def to_json(document: dict[str, Any]) -> str:
    """The document as text (keys in a fixed order, so two reports diff cleanly)."""
    return json.dumps(document, indent=2, ensure_ascii=False)


def join_dynamic(document: dict[str, Any]) -> None:
    """Attach each observed break (``dynamic.breaks``) to the static finding at its source
    line, and sum what was observed on each finding (``observed``)."""
    from .catalogue import GB_PATTERNS

    by_file: dict[str, list[dict[str, Any]]] = {}
    for finding in document["findings"]:
        finding["observed"] = None
        by_file.setdefault(finding["file"], []).append(finding)
    for observed in document["dynamic"].get("breaks", []):
        frame = observed.get("frame") or {}
        candidates = [f for f in by_file.get(str(frame.get("file")), [])
                      if f["line"] <= (frame.get("line") or 0) <= f["end_line"]]
        preferred = GB_PATTERNS.get(observed.get("gb_id") or "")
        candidates.sort(key=lambda f: (f["pattern"] != preferred, f["end_line"] - f["line"]))
        observed["finding"] = candidates[0]["id"] if candidates else None
        if candidates:
            seen = candidates[0]["observed"] or {"breaks": 0, "gb_ids": [], "targets": []}
            seen["breaks"] += observed["count"]
            seen["gb_ids"] = sorted(set(seen["gb_ids"]) | {observed.get("gb_id") or "?"})
            seen["targets"] = sorted(set(seen["targets"]) | set(observed["targets"]))
            candidates[0]["observed"] = seen
