"""One self-contained HTML page: the document and the source lines around each finding
embedded as JSON, the page's CSS and JavaScript inlined (``report.css``, ``report.js``).
It works offline: no CDN, no fonts, no network request of any kind."""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

CONTEXT = 6  # source lines shown around each finding in the file view


def to_html(document: dict[str, Any], root: Path) -> str:
    assets = resources.files(__package__)
    page = (assets / "report.html").read_text(encoding="utf-8")
    data = {"document": document, "sources": sources(document, root)}
    settings = document["settings"]
    meta = (f"eqrewrite {document['tool']['version']} · paths {', '.join(settings['paths'])}"
            f" · scope {', '.join(settings['scope'])} · rules {', '.join(settings['rules'])}")
    replacements = {
        "__TITLE__": html.escape(", ".join(settings["paths"])),
        "__META__": html.escape(meta),
        "__STYLE__": (assets / "report.css").read_text(encoding="utf-8"),
        "__SCRIPT__": (assets / "report.js").read_text(encoding="utf-8"),
        # "</" cannot appear inside a script element; "<\/" is the same JSON string.
        "__DATA__": json.dumps(data, ensure_ascii=False).replace("</", "<\\/"),
    }
    for marker, value in replacements.items():
        page = page.replace(marker, value)
    return page


def sources(document: dict[str, Any], root: Path) -> dict[str, list[tuple[int, list[str]]]]:
    """For each file with findings: ``(first line, lines)`` windows around the findings,
    merged where they touch (the page shows the file with those lines highlighted)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for finding in document["findings"]:
        spans.setdefault(finding["file"], []).append(
            (max(1, finding["line"] - CONTEXT), finding["end_line"] + CONTEXT))
    found = {}
    for file, ranges in spans.items():
        try:
            lines = (root / file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        found[file] = [(start, lines[start - 1:end]) for start, end in _merged(ranges)]
    return found


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
