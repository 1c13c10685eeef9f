"""Count torch.compile graph breaks of a callable and say why they happen.

``torch._dynamo.explain`` alone undercounts: its ``graph_break_count`` is ``graph_count - 1``,
so a break at a function's first or last op, a break inside an inlined helper, or a frame that
Dynamo skips entirely (a break inside a ``for`` loop) shows up as 0. ``count_graph_breaks``
therefore takes three measurements and keeps all of them in a ``BreakReport``:

* ``explain``: graph count and ``graph_count - 1``;
* Dynamo's own graph-break events during the explain run. Each time Dynamo decides to break
  (or to skip a frame because of a break) it writes one record to its ``graph_breaks``
  artifact loggers; they are captured here with a temporary handler. The counter
  ``torch._dynamo.utils.counters["graph_break"]`` is not enough on torch 2.13: data-dependent
  branching and breaks in loops stay under ``counters["unimplemented"]``;
* whether ``torch.compile(fn, fullgraph=True)`` compiles and runs.

Each event's reason is mapped to a stable id of ``torch/_dynamo/graph_break_registry.json``
(``GB0170`` ...). On torch 2.13 the reason text carries the registry's ``Gb_type`` as a line
of its own and a documentation link ``.../gb/gb0170.html``; ``classify`` uses the link first,
then the ``Gb_type`` lines, then a few aliases for explain's terse reasons.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

import torch
import torch._dynamo
from torch._dynamo.utils import counters

# The documentation link that torch >= 2.8 appends to a graph break message, and bare ids.
_LINK_ID = re.compile(r"/gb/gb(\d{4})\.html", re.IGNORECASE)
_BARE_ID = re.compile(r"\bGB(\d{4})\b")
# One frame of a formatted traceback (traceback.format_list and "from user code:" blocks).
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
# "Graph break in user code at PATH:LINE" and its "(user stack suppressed ...)" variant.
_LOCATION = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)
# Lines Dynamo puts before the real reason, ending with ":" and then a blank line.
_WRAPPERS = ("Encountered graph break when attempting to trace",
             "Failed to handle graph break gracefully")
# explain() reports some breaks by an internal name instead of the message.
_ALIASES = {"generic_jump": "Data-dependent branching"}

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_SITE_DIRS = tuple(os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                   for k in ("purelib", "platlib"))


@dataclass
class BreakReason:
    """One distinct graph break: its cause, registry id and user-code location."""

    reason: str
    gb_id: str | None
    gb_type: str | None
    frame: str | None
    count: int = 1
    detail: str = ""  # the message's "Explanation:" line, e.g. which builtin was refused


@dataclass
class BreakReport:
    """Everything measured for one callable; ``breaks`` is the number to compare."""

    graph_count: int
    explain_breaks: int  # explain's graph_count - 1, clamped at 0 (it is -1 with no graph)
    break_events: int  # Dynamo's graph-break log records during the explain run
    fullgraph_ok: bool | None  # None: not measured (counted during a run, not compiled apart)
    fullgraph_error: str | None
    reasons: list[BreakReason] = field(default_factory=list)
    skipped_frames: int = 0  # counters["frames"]: total - ok, i.e. frames that fell back to eager

    @property
    def breaks(self) -> int:
        """The best single number: max(explain_breaks, break_events, 1 if fullgraph failed)."""
        return max(self.explain_breaks, self.break_events,
                   1 if self.fullgraph_ok is False else 0)


# An entry of torch's graph-break registry (its newest version) plus every type it had.
class RegistryEntry(TypedDict, total=False):
    Gb_type: str
    Context: str
    Explanation: str
    Hints: list[str]
    Gb_types: list[str]


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, RegistryEntry]:
    """torch's graph_break_registry.json, loaded once (cached)."""
    path = Path(torch._dynamo.__file__).with_name("graph_break_registry.json")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # older torch ships no registry: nothing maps
        return {}
    # Each id holds a list of versions, newest first. An entry here is the newest version
    # (Gb_type, Context, Explanation, Hints) plus "Gb_types": every type the id ever had.
    out: dict[str, RegistryEntry] = {}
    for gb_id, versions in raw.items():
        entries = versions if isinstance(versions, list) else [versions]
        newest: RegistryEntry = entries[0]  # torch's JSON, read as it is
        out[gb_id] = {**newest, "Gb_types": [e["Gb_type"] for e in entries]}
    return out


@functools.lru_cache(maxsize=1)
def _type_patterns() -> list[tuple[re.Pattern[str], str]]:
    """(whole-line pattern, id) for every Gb_type; current types before historical ones."""
    current: list[tuple[re.Pattern[str], str]] = []
    historical: list[tuple[re.Pattern[str], str]] = []
    for gb_id, entry in registry().items():
        for i, gb_type in enumerate(entry["Gb_types"]):
            # Some Gb_types are templates ("... '{attr_name}' ..."): a placeholder matches text.
            body = re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(gb_type))
            (current if i == 0 else historical).append((re.compile(f"^{body}$"), gb_id))
    return current + historical


def _entry(gb_id: str) -> tuple[str | None, str | None]:
    """(gb_id, current Gb_type) if the id is in the registry, else (None, None)."""
    entry = registry().get(gb_id)
    return (gb_id, entry["Gb_type"]) if entry else (None, None)


def _strip_wrappers(text: str) -> str:
    """Drop Dynamo's "Encountered graph break when ...:" style preambles."""
    lines = text.strip().splitlines()
    while lines and lines[0].startswith(_WRAPPERS):
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    return "\n".join(lines)


def classify(reason_text: str) -> tuple[str | None, str | None]:
    """(gb_id, gb_type) for a Dynamo break reason, by matching registry Gb_types and ids."""
    text = _strip_wrappers(reason_text)
    # The first id in the text is the root cause: Dynamo appends follow-up breaks after it.
    ids = [m for m in (_LINK_ID.search(text), _BARE_ID.search(text)) if m]
    for match in sorted(ids, key=lambda m: m.start()):
        found = _entry(f"GB{match.group(1)}")
        if found[0]:
            return found
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        for pattern, gb_id in _type_patterns():
            if pattern.match(line):
                return _entry(gb_id)
    if lines:
        alias = _ALIASES.get(lines[0].split()[0])
        if alias:
            return classify(alias)
    return None, None


def _is_user_file(filename: str) -> bool:
    """False for torch, this module, the standard library and synthetic frames."""
    path = os.path.abspath(filename)
    if filename.startswith("<") or path.startswith(_TORCH_DIR) or path == _THIS_FILE:
        return False
    return not path.startswith(_STDLIB_DIR) or path.startswith(_SITE_DIRS)


def _innermost_user_frame(frames: list[tuple[str, int]]) -> str | None:
    """"file.py:LINE" of the last (innermost) frame in user code."""
    for filename, lineno in reversed(frames):
        if _is_user_file(filename):
            return f"{filename}:{lineno}"
    return None


def _frames_in(text: str) -> list[tuple[str, int]]:
    """Every ``File "...", line N`` frame of a formatted traceback, outermost first."""
    return [(m.group(1), int(m.group(2))) for m in _FRAME.finditer(text)]


def _short(text: str) -> tuple[str, str]:
    """(first line, "Explanation:" line) of a graph break message, wrappers removed."""
    lines = [line.strip() for line in _strip_wrappers(text).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    detail = next((ln.removeprefix("Explanation:").strip() for ln in lines
                   if ln.startswith("Explanation:")), "")
    return first, detail


def _make_reason(text: str, frame: str | None) -> BreakReason:
    """A BreakReason (count 1) for one break message seen at ``frame``."""
    gb_id, gb_type = classify(text)
    first, detail = _short(text)
    return BreakReason(reason=first, gb_id=gb_id, gb_type=gb_type, frame=frame, detail=detail)


def _reason_from_record(record: logging.LogRecord) -> BreakReason:
    """Parse one graph-break log record (symbolic_convert or convert_frame format)."""
    message = record.getMessage()
    head, _, trace = message.partition("User code traceback:")
    if "Graph Break Reason:" in head:
        text = head.split("Graph Break Reason:", 1)[1]
    elif record.exc_info and record.exc_info[1] is not None:
        # convert_frame's "results in a skip" record: the reason is the attached exception.
        text, trace = str(record.exc_info[1]), message
    else:
        text = head
    frame = _innermost_user_frame(_frames_in(trace))
    location = _LOCATION.search(head)
    if frame is None and location and _is_user_file(location.group(1)):
        # A duplicate break is logged without its traceback, only with its location.
        frame = f"{location.group(1)}:{location.group(2)}"
    return _make_reason(text, frame)


def _dedup(reasons: list[BreakReason]) -> list[BreakReason]:
    """Merge reasons with the same (gb_id or reason, frame), summing counts, first seen first."""
    merged: dict[tuple[str, str | None], BreakReason] = {}
    for r in reasons:
        key = (r.gb_id or r.reason, r.frame)
        if key in merged:
            merged[key].count += r.count
        else:
            merged[key] = BreakReason(r.reason, r.gb_id, r.gb_type, r.frame, r.count, r.detail)
    return list(merged.values())


class _Collector(logging.Handler):
    """Keeps the graph-break records Dynamo emits; other records are follow-ups."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # exc.py also logs backend failures to this artifact; they are followed by a real
        # "Graph break ..." record, so counting only those avoids counting one break twice.
        if record.getMessage().startswith("Graph break"):
            self.records.append(record)


def _graph_break_loggers() -> list[logging.Logger]:
    """Dynamo's ``graph_breaks`` artifact loggers (one per module that logs breaks)."""
    names = [n for n in list(logging.Logger.manager.loggerDict)
             if n.startswith("torch.") and n.endswith(".__graph_breaks")]
    return [logging.getLogger(n) for n in sorted(names)]


@contextmanager
def _capture_graph_breaks() -> Iterator[_Collector]:
    """Enable the graph_breaks artifact loggers into a collector; restore them afterwards."""
    collector = _Collector()
    with listening(collector, _graph_break_loggers()):
        yield collector


@contextmanager
def listening(handler: logging.Handler, loggers: list[logging.Logger],
              keep_all: bool = False) -> Iterator[None]:
    """``handler`` receives every DEBUG record of ``loggers`` inside the block; their levels,
    propagation and handlers are restored afterwards. Records of loggers forced on only for
    us (of every logger, with ``keep_all``) do not reach the user's handlers."""
    saved = []
    for logger in loggers:
        saved.append((logger, logger.level, logger.propagate))
        if keep_all or not logger.isEnabledFor(logging.DEBUG):
            logger.propagate = False
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def _explain_reasons(explained: Any) -> list[BreakReason]:
    """Reasons from explain() itself, used only when no log record was captured."""
    out = []
    for br in explained.break_reasons:
        frames = [(fs.filename, fs.lineno) for fs in br.user_stack or []]
        out.append(_make_reason(str(br.reason), _innermost_user_frame(frames)))
    return out


def _error_summary(error: BaseException) -> str:
    """"Type: first non-empty line" of an exception."""
    first = next((ln.strip() for ln in str(error).splitlines() if ln.strip()), "")
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _fullgraph(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               backend: str) -> BaseException | None:
    """Compile with fullgraph=True and call; the error (if any) instead of raising it."""
    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend=backend)(*args, **kwargs)
    except Exception as error:  # any failure, Dynamo's or the user's, means "not one graph"
        return error
    finally:
        torch._dynamo.reset()
    return None


def count_graph_breaks(fn: Callable[..., Any], args: tuple[Any, ...] = (),
                       kwargs: dict[str, object] | None = None,
                       backend: str = "eager") -> BreakReport:
    """Measure ``fn(*args, **kwargs)`` under Dynamo: explain, break events and fullgraph."""
    kwargs = kwargs or {}
    # explain() runs fn for real: if fn itself fails there is nothing to measure, so that
    # error propagates; only the fullgraph run's errors are captured in the report.
    torch._dynamo.reset()
    # Cleared so that the frame counts below belong to this run only.
    counters.clear()
    with _capture_graph_breaks() as collector:
        explained = torch._dynamo.explain(fn)(*args, **kwargs)
    frames = counters["frames"]
    skipped = frames["total"] - frames["ok"]
    # The counter misses some kinds (see module docstring); it never exceeds the records unless
    # logging was globally disabled, in which case it is the better lower bound.
    events = max(len(collector.records), sum(counters["graph_break"].values()))
    reasons = [_reason_from_record(r) for r in collector.records]
    if not reasons:
        reasons = _explain_reasons(explained)
    error = _fullgraph(fn, args, kwargs, backend)
    if error is not None and not reasons:
        frame = _innermost_user_frame(_frames_in(str(error)))
        reasons = [_make_reason(str(error), frame)]
    return BreakReport(
        graph_count=explained.graph_count,
        explain_breaks=max(0, explained.graph_break_count),
        break_events=events,
        fullgraph_ok=error is None,
        fullgraph_error=None if error is None else _error_summary(error),
        reasons=_dedup(reasons),
        skipped_frames=skipped,
    )


class BreakRecorder:
    """Counts the graph breaks of whatever Dynamo compiles while it is active: the oracle's
    compiled run measures its own breaks instead of compiling the target again for
    ``explain`` and ``fullgraph=True``. Graphs come from Dynamo's ``unique_graphs`` counter,
    breaks from its graph-break events, skipped frames from its frame counters; whether
    ``fullgraph=True`` would compile is not measured (``fullgraph_ok`` is None unless a
    break or a skipped frame shows that it would not)."""

    def __enter__(self) -> BreakRecorder:
        counters.clear()
        self._capture = _capture_graph_breaks()
        self._collector = self._capture.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._capture.__exit__(exc_type, error, trace)

    def report(self) -> BreakReport:
        """What was counted between enter and exit."""
        frames = counters["frames"]
        skipped = frames["total"] - frames["ok"]
        graphs = counters["stats"]["unique_graphs"]
        events = max(len(self._collector.records), sum(counters["graph_break"].values()))
        reasons = [_reason_from_record(r) for r in self._collector.records]
        return BreakReport(
            graph_count=graphs,
            explain_breaks=max(0, graphs - 1),
            break_events=events,
            fullgraph_ok=False if events or skipped else None,
            fullgraph_error=None,
            reasons=_dedup(reasons),
            skipped_frames=skipped,
        )
