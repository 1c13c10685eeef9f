"""Known issues: findings a campaign recognises as already reported, so they are counted
but get no folder of their own.

A known-issues file is YAML with one entry per public issue::

    issues:
      - url: https://github.com/pytorch/pytorch/issues/197739
        title: argmin/argmax on a transposed input index the physical order
        class: compiler-bug            # optional: the finding's class
        ops: [argmin, argmax]          # optional: any of these among the ops involved
        kinds: [output/exact]          # optional: any of these divergence kinds
        error: "int8_t without overflow"  # optional: a regular expression on the error text

Every key given must match; an entry with no key but ``url`` is refused (it would hide
everything). The shipped file, ``known_issues.yaml`` beside this module, is used unless
``--known-issues FILE`` names another (``--known-issues none`` uses none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .outcome import CLASSES, Record

DEFAULT_FILE = Path(__file__).with_name("known_issues.yaml")
_MATCH_KEYS = ("class", "ops", "kinds", "error")


class KnownIssuesError(ValueError):
    """A known-issues file that cannot be used (the message names file, entry and cause)."""


@dataclass(frozen=True)
class KnownIssue:
    """One known issue and the pattern that recognises its findings."""

    url: str
    title: str = ""
    outcome_class: str | None = None
    ops: frozenset[str] = frozenset()
    divergence_kinds: frozenset[str] = frozenset()
    error: re.Pattern[str] | None = None

    def matches(self, finding: Record) -> bool:
        """Does every key of the pattern hold for ``finding`` (a campaign result)?"""
        if self.outcome_class is not None and finding.get("class") != self.outcome_class:
            return False
        if self.ops and not self.ops & set(finding.get("signature_ops") or ()):
            return False
        if self.divergence_kinds and not (
                self.divergence_kinds & set(finding.get("kinds") or ())):
            return False
        text = finding.get("error") or finding.get("detail") or ""
        return self.error is None or self.error.search(text) is not None


def load(path: Path | None) -> list[KnownIssue]:
    """The issues in ``path`` (None: none), validated."""
    if path is None:
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise KnownIssuesError(f"{path}: cannot read known issues: {error}") from None
    entries = (data or {}).get("issues") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnownIssuesError(f"{path}: expected a mapping with an 'issues' list")
    return [_entry(path, number, entry) for number, entry in enumerate(entries, 1)]


def _entry(path: Path, number: int, entry: object) -> KnownIssue:
    where = f"{path}: issue #{number}"
    if not isinstance(entry, dict):
        raise KnownIssuesError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - {"url", "title", *_MATCH_KEYS})
    if unknown:
        raise KnownIssuesError(f"{where}: unknown keys {unknown} (known: url, title, "
                               f"{', '.join(_MATCH_KEYS)})")
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise KnownIssuesError(f"{where}: 'url' must be the public issue's address")
    if not any(key in entry for key in _MATCH_KEYS):
        raise KnownIssuesError(f"{where} ({url}): no pattern (give at least one of "
                               f"{', '.join(_MATCH_KEYS)})")
    outcome_class = entry.get("class")
    if outcome_class is not None and outcome_class not in CLASSES:
        raise KnownIssuesError(f"{where}: unknown class {outcome_class!r} "
                               f"(known: {', '.join(CLASSES)})")
    try:
        error = re.compile(entry["error"]) if "error" in entry else None
    except (re.error, TypeError) as problem:
        raise KnownIssuesError(f"{where}: bad 'error' pattern: {problem}") from None
    return KnownIssue(url, str(entry.get("title", "")), outcome_class,
                      _names(where, entry, "ops"),
                      _names(where, entry, "kinds"), error)


def _names(where: str, entry: dict[str, Any], key: str) -> frozenset[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KnownIssuesError(f"{where}: {key!r} must be a list of names")
    return frozenset(value)


def recognise(issues: list[KnownIssue], finding: Record) -> KnownIssue | None:
    """The first known issue that matches ``finding``, if any."""
    return next((issue for issue in issues if issue.matches(finding)), None)
