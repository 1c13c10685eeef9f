"""The typed values a rewrite run hands between its layers: the runner (and its workers),
the report formats, the command line and its plugins (the oracle's ``--oracle`` step).

Closed sets are string enums whose values are the words the JSON, SARIF and text reports
print, so a value serialises as it always has. Records are frozen: a worker builds them,
pickles them back to the main process, and nothing changes them afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..matching.matcher import Edit
    from .cache import Stamp


class Mode(StrEnum):
    """What a run may write: sources in place, an ``--out`` tree, or nothing."""

    WRITE = "write"
    CHECK = "check"
    DIFF = "diff"
    OUT = "out"

    @property
    def reports_only(self) -> bool:
        """``--check`` and ``--diff``: nothing is written, changes are what would happen."""
        return self in (Mode.CHECK, Mode.DIFF)


class Status(StrEnum):
    """What happened to one file."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    ERROR = "error"
    GENERATED = "generated"  # marked @generated: left alone
    SKIPPED = "skipped"      # a link outside the paths, a hard-linked file...: the reason says


@dataclass(frozen=True)
class EditRecord:
    """One edit as the reports show it: 1-based lines and columns of the text its round read
    (round 1: the original file; later rounds rewrite the previous round's output)."""

    rule: str
    round: int
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    before: str
    after: str
    safety: str

    @classmethod
    def of(cls, round_number: int, edit: Edit) -> EditRecord:
        """The record of an engine edit made in round ``round_number``."""
        line, col, end_line, end_col = edit.span
        return cls(edit.rule.id, round_number, line, col + 1, end_line, end_col + 1,
                   edit.before, edit.after, str(edit.rule.safety))

    def to_json(self) -> dict[str, Any]:
        """The record of the JSON report's ``edits`` (without its ``file``)."""
        return {"rule": self.rule, "round": self.round,
                "start": {"line": self.start_line, "col": self.start_col},
                "end": {"line": self.end_line, "col": self.end_col},
                "before": self.before, "after": self.after, "safety": self.safety}


@dataclass(frozen=True)
class NoteRecord:
    """A graph break a rule recognised but left alone, at the original file's line."""

    rule: str
    line: int
    col: int  # 1-based
    message: str

    def to_json(self) -> dict[str, Any]:
        """The record of the JSON report's ``notes`` (without its ``file``)."""
        return {"rule": self.rule, "line": self.line, "col": self.col, "message": self.message}


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file."""

    path: str
    status: Status
    edits: tuple[EditRecord, ...] = ()
    error: str | None = None  # the cause of an error, or why a file was skipped
    line: int = 0
    col: int = 0
    diff: str = ""
    written: bool = False  # whether a file was written: the source, or its --out copy
    output: str | None = None  # where --out puts the file (written or already up to date)
    stamp: Stamp | None = None  # the processed text's, when the cache may keep this outcome
    notes: tuple[NoteRecord, ...] = ()  # graph breaks left alone, and why
