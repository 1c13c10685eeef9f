"""Known issues: findings a campaign recognises as already reported, so they are counted
but get no folder of their own, and that ``eqrewrite report`` names.

A known-issues file is YAML with the date its entries were last checked upstream and one
entry per public issue::

    checked: 2026-11-28                # when the states below were read upstream
    issues:
      - url: https://github.com/pytorch/pytorch/issues/197739
        title: argmin/argmax on a transposed input index the physical order
        state: open                    # open | closed, as read on ``checked``
        affects: [2.13.0+cpu]          # torch versions it was seen to reproduce on
        fixed_in: "2.14"               # optional: where upstream says it is fixed
        match: same-repro              # how close the thread is to the findings (MATCHES)
        how: "..."                     # how the match was made: what was compared
        findings: [compiler-bug-...]   # finding folders it was written for
        reproducer: tests/...          # or a reproducer in this repository
        class: compiler-bug            # pattern, optional: the finding's class
        ops: [argmin, argmax]          # optional: any of these among the ops involved
        kinds: [output/exact]          # optional: any of these divergence kinds
        features: [try-except]         # optional: any of these generator features
        error: "int8_t without overflow"  # optional: a regular expression on the error text
                                       # (the record's ``detail`` when it has no error)
        program: "graph_break\\(\\)"   # optional: a regular expression on the program text

Every pattern key given must match; an entry with no pattern key is refused (it would hide
everything). ``program`` needs the program's text, which only the report has (the smallest
program of the finding folder): in a campaign such an entry matches nothing, so an entry
whose thread could not be compared line by line (``match: same-symptom``) should carry one.
The shipped file, ``known_issues.yaml`` beside this module, is used unless
``--known-issues FILE`` names another (``--known-issues none`` uses none).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..formats import FindingRecord
    from .outcome import SeedResult

import yaml

from .outcome import CLASSES

DEFAULT_FILE = Path(__file__).with_name("known_issues.yaml")
_MATCH_KEYS = ("class", "ops", "kinds", "features", "error", "program")
_ABOUT_KEYS = ("title", "state", "affects", "fixed_in", "match", "how", "findings",
               "reproducer")
STATES = ("open", "closed")
# How close an issue's thread is to the findings it is matched with, closest first.
MATCHES = {
    "same-repro": "its reproducer has the shape of the finding's minimal program",
    "same-mechanism": "its thread describes the mechanism the finding shows",
    "same-error": "it reports the same error text",
    "same-symptom": "same symptom; its reproducer was not compared",
}


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
    features: frozenset[str] = frozenset()
    program: re.Pattern[str] | None = None
    state: str = ""
    affects: tuple[str, ...] = ()
    fixed_in: str = ""
    match: str = ""
    how: str = ""
    findings: tuple[str, ...] = ()
    reproducer: str = ""

    @property
    def number(self) -> str:
        return self.url.rstrip("/").rpartition("/")[2]

    def matches(self, finding: SeedResult | FindingRecord, program: str | None = None) -> bool:
        """Does every key of the pattern hold for ``finding`` (a campaign result, or a
        finding record: the keys both hold), and for ``program`` (its program's text) when
        the pattern names one?"""
        if self.outcome_class is not None and finding.get("class") != self.outcome_class:
            return False
        if self.ops and not self.ops & set(finding.get("signature_ops") or ()):
            return False
        if self.divergence_kinds and not (
                self.divergence_kinds & set(finding.get("kinds") or ())):
            return False
        if self.features and not self.features & set(finding.get("features") or ()):
            return False
        if self.program is not None and (
                program is None or self.program.search(program) is None):
            return False
        text = finding.get("error") or finding.get("detail") or ""
        return self.error is None or self.error.search(text) is not None


@dataclass(frozen=True)
class KnownIssues:
    """A known-issues file: its entries, when they were last checked, where it is."""

    issues: tuple[KnownIssue, ...] = ()
    checked: str = ""
    path: Path | None = None


def read(path: Path | None) -> KnownIssues:
    """The file at ``path`` (None: no file, no entries), validated."""
    if path is None:
        return KnownIssues()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise KnownIssuesError(f"{path}: cannot read known issues: {error}") from None
    entries = (data or {}).get("issues") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnownIssuesError(f"{path}: expected a mapping with an 'issues' list")
    checked = data.get("checked", "")
    # YAML reads an unquoted 2026-11-28 as a date
    checked = checked.isoformat() if isinstance(checked, datetime.date) else str(checked)
    return KnownIssues(tuple(_entry(path, number, entry)
                             for number, entry in enumerate(entries, 1)), checked, path)


def load(path: Path | None) -> list[KnownIssue]:
    """The issues in ``path`` (None: none), validated."""
    return list(read(path).issues)


def _entry(path: Path, number: int, entry: object) -> KnownIssue:
    where = f"{path}: issue #{number}"
    if not isinstance(entry, dict):
        raise KnownIssuesError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - {"url", *_ABOUT_KEYS, *_MATCH_KEYS})
    if unknown:
        raise KnownIssuesError(f"{where}: unknown keys {unknown} (known: url, "
                               f"{', '.join(_ABOUT_KEYS)}, {', '.join(_MATCH_KEYS)})")
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
    _choice(where, entry, "state", STATES)
    _choice(where, entry, "match", tuple(MATCHES))
    return KnownIssue(url, str(entry.get("title", "")), outcome_class,
                      _names(where, entry, "ops"), _names(where, entry, "kinds"),
                      _pattern(where, entry, "error"), _names(where, entry, "features"),
                      _pattern(where, entry, "program"),
                      str(entry.get("state", "")), tuple(_names(where, entry, "affects",
                                                                ordered=True)),
                      str(entry.get("fixed_in", "")), str(entry.get("match", "")),
                      str(entry.get("how", "")).strip(),
                      tuple(_names(where, entry, "findings", ordered=True)),
                      str(entry.get("reproducer", "")))


def _choice(where: str, entry: dict[str, Any], key: str, allowed: tuple[str, ...]) -> None:
    if key in entry and entry[key] not in allowed:
        raise KnownIssuesError(f"{where}: {key!r} must be one of {', '.join(allowed)}, "
                               f"got {entry[key]!r}")


def _pattern(where: str, entry: dict[str, Any], key: str) -> re.Pattern[str] | None:
    try:
        return re.compile(entry[key]) if key in entry else None
    except (re.error, TypeError) as problem:
        raise KnownIssuesError(f"{where}: bad {key!r} pattern: {problem}") from None


def _names(where: str, entry: dict[str, Any], key: str, ordered: bool = False
           ) -> Any:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KnownIssuesError(f"{where}: {key!r} must be a list of names")
    return list(value) if ordered else frozenset(value)


def recognise(issues: list[KnownIssue] | tuple[KnownIssue, ...],
              finding: SeedResult | FindingRecord,
              program: str | None = None) -> KnownIssue | None:
    """The first known issue that matches ``finding`` (and ``program``, its program's text,
    when known), if any."""
    return next((issue for issue in issues if issue.matches(finding, program)), None)
