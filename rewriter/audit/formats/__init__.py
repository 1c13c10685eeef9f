"""Render an audit document: terminal text (rich), Markdown, JSON, SARIF 2.1.0 or one HTML
page. Every format shows the summary first and the details after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FORMATS = ("text", "md", "json", "sarif", "html")


def render(document: dict[str, Any], output_format: str, root: Path, color: bool = False) -> str:
    """The document as ``output_format`` text; ``root`` is where finding files live."""
    if output_format == "json":
        from ..document import to_json

        return to_json(document) + "\n"
    if output_format == "sarif":
        from .sarif import to_sarif

        return to_sarif(document, root)
    if output_format == "md":
        from .markdown import to_markdown

        return to_markdown(document)
    if output_format == "html":
        from .html import to_html

        return to_html(document, root)
    from .text import to_text

    return to_text(document, color)


def share(part: int, total: int) -> str:
    """``"3 (25 %)"``."""
    return f"{part} ({round(100 * part / total)} %)" if total else str(part)


def fix_text(finding: dict[str, Any]) -> str:
    """What fixes a finding, in a few words: ``rule select-assign``, ``setting ...``..."""
    if finding["fix"] == "rule":
        return f"rule {finding['rule']}"
    if finding["fix"] == "setting":
        return "setting " + ", ".join(s["name"] for s in finding["settings"])
    return "manual"


def why_text(finding: dict[str, Any]) -> str:
    """``why not rewritten: reason; remedy`` (empty when a rule fixes it)."""
    why = finding.get("why_not")
    if not why:
        return ""
    rules = f" ({', '.join(why['rules'])})" if why["rules"] else ""
    return f"not rewritten{rules}: {why['reason']}. Fix: {why['remedy']}"


def location(finding: dict[str, Any]) -> str:
    return f"{finding['file']}:{finding['line']}:{finding['column']}"


def breaks_key(observed: dict[str, Any]) -> str:
    """``GB0170 at file.py:12`` for an observed break."""
    frame = observed.get("frame")
    where = f" at {frame['file']}:{frame['line']}" if frame else ""
    return f"{observed.get('gb_id') or '?'}{where}"



def switch_names(switches: dict[str, Any]) -> str:
    """``capture_scalar_outputs=true, ...``: the switches of the ``switches`` section."""
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in switches["dynamo_config"].items())


def cells(switches: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(mode, tree, column title)`` for each measured cell, the original by default
    first."""
    return [(mode, tree, f"{tree} {'+ switches' if mode == 'switches' else 'default'}")
            for tree in switches["trees"] for mode in ("default", "switches")]


def mode_counts(switches: dict[str, Any], counts: dict[str, dict[str, int]], mode: str) -> str:
    """A site's or a target's breaks in one mode: ``"1 → 0"`` (original → rewritten), or
    the original's alone when no rules ran."""
    return " → ".join(str(counts[mode][tree]) for tree in switches["trees"])


# Where the switches make Dynamo raise instead of breaking the graph (a known limit).
RAISES_ISSUE = "https://github.com/pytorch/pytorch/issues/180596"


def compile_failures(switches: dict[str, Any]) -> list[str]:
    """One sentence per target and cell whose compiled run raised where eager did not
    (``raises``): such a program stops there, in that mode, instead of breaking."""
    found = []
    for row in switches["targets"]:
        for mode, tree, title in cells(switches):
            error = (row.get("raises") or {}).get(mode, {}).get(tree)
            if error:
                found.append(f"{row['name']} ({title}): the compiled run raises {error}")
    return found

