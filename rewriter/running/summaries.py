"""The call graph's module summaries, cached on disk: an edited file is summarised alone.

``analysis/modulesummary.py`` reduces every file to a ``Summary``; ``callgraph.py`` solves
reachability over all of them. Summarising parses each file (most of a cold run's call-graph
time); solving is a fraction of that. The store keeps, under one key for the tool build:

* an index (``callgraph-<key>.json``): per path, the file's stamp (mtime, size, content
  digest), its module name (which depends on the folders' ``__init__.py`` files, not on the
  file) and the digest of its summary (None: it does not parse); and the last solved scope
  with the digest of its inputs (every path, module name and summary digest);
* the summaries themselves (``callgraph-<key>.marshal``), each with its digest, read only
  when the scope must be solved again.

A run stats every file; a file whose stamp differs is re-read, and re-summarised only when
its content differs. When every summary is the same as the last solve's (a comment edited,
a file touched), the stored scope is the answer; otherwise the summaries are loaded, the
changed ones replaced, and the graph solved again. Summaries are plain tuples, dicts and
strings (``marshal``: several times faster to load than pickled dataclasses), with sets as
sorted tuples, so that a summary's digest is the same in every process.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.callgraph import CallGraph, profiled_functions
from ..analysis.modulesummary import ClassSummary, FunctionSummary, Summary, summarize
from ..syntax.enums import Scope
from ..workspace.files import write_atomic
from ..workspace.workers import WorkerPool
from .cache import (
    Stamp,
    cache_file,
    canonical,
    digest,
    load_json,
    save_json,
    stamp_of,
    stat_matches,
    touch,
)

PARALLEL_FILES = 64  # files per worker below which summarising stays in-process

Plain = tuple[Any, ...]  # a summary as plain data (see ``plain``)


# -- summaries as plain data ---------------------------------------------------------------

def _function_plain(function: FunctionSummary) -> Plain:
    return (function.owner, tuple(function.nested), tuple(function.decorators),
            tuple(sorted(function.references)), tuple(sorted(function.self_attributes)),
            tuple(sorted(function.called)), tuple(sorted(function.built)),
            tuple(sorted(function.annotations)), tuple(sorted(function.stores)))


def _function(value: Plain) -> FunctionSummary:
    owner, nested, decorators, references, attributes, called, built, annotations, stores = (
        value)
    return FunctionSummary(owner, list(nested), list(decorators), set(references),
                           set(attributes), set(called), set(built), set(annotations),
                           set(stores))


def _class_plain(cls: ClassSummary) -> Plain:
    return (tuple(cls.bases), {k: tuple(v) for k, v in cls.methods.items()},
            tuple(cls.listed), {k: tuple(v) for k, v in cls.self_values.items()})


def _class(value: Plain) -> ClassSummary:
    bases, methods, listed, self_values = value
    return ClassSummary(list(bases), {k: list(v) for k, v in methods.items()}, list(listed),
                        {k: list(v) for k, v in self_values.items()})


def plain(summary: Summary) -> Plain:
    """``summary`` as tuples, dicts and strings (sets sorted): what the store keeps."""
    return (summary.name, summary.path, summary.is_package,
            {k: tuple(tuple(b) for b in v) for k, v in summary.bindings.items()},
            {k: _function_plain(f) for k, f in summary.functions.items()},
            {k: _class_plain(c) for k, c in summary.classes.items()},
            {k: (form, tuple(refs)) for k, (form, refs) in summary.values.items()},
            tuple(sorted(summary.roots)))


def from_plain(value: Plain) -> Summary:
    """The ``Summary`` that ``plain`` turned into ``value``."""
    name, path, is_package, bindings, functions, classes, values, roots = value
    return Summary(name, path, is_package,
                   {k: [(c, t) for c, t in v] for k, v in bindings.items()},
                   {k: _function(f) for k, f in functions.items()},
                   {k: _class(c) for k, c in classes.items()},
                   {k: (form, list(refs)) for k, (form, refs) in values.items()},
                   set(roots))


def summary_digest(value: Plain) -> str:
    """The digest of a plain summary, the same in every process."""
    return digest(canonical(value).encode())[:32]


# -- summarising files -------------------------------------------------------------------

@dataclass(frozen=True)
class IndexEntry:
    """What the index knows of one file."""

    stamp: Stamp
    name: str  # module name it was summarised under
    summary: str | None  # digest of its summary; None when it does not parse


@dataclass(frozen=True)
class Summarized:
    """A worker's answer for one file: its record, and the summary unless the content was
    the one already recorded (``same``)."""

    path: str
    record: IndexEntry | None  # None: unreadable (never recorded)
    body: Plain | None = None
    same: bool = False


def read_text(data: bytes) -> str:
    """The text the call graph reads: UTF-8 with universal newlines, as ``read_text``."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def summarize_file(task: tuple[str, str, str | None]) -> Summarized:
    """Summarise ``(path, module name, content digest recorded or None)``."""
    path, name, known = task
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
    except OSError:
        return Summarized(path, None)
    sha = digest(data)
    if sha == known:
        return Summarized(path, IndexEntry(stamp_of(stat, sha), name, None), same=True)
    try:
        summary = summarize(path, read_text(data), name)
    except UnicodeDecodeError:
        summary = None
    body = None if summary is None else plain(summary)
    return Summarized(path, IndexEntry(stamp_of(stat, sha), name,
                                   None if body is None else summary_digest(body)), body)


def _no_setup() -> None:
    """Workers need no preparation: each summary reads its own file."""


def _summarize_all(tasks: list[tuple[str, str, str | None]], jobs: int | None
                   ) -> Iterator[Summarized]:
    workers = min(jobs or os.cpu_count() or 1, max(1, len(tasks) // PARALLEL_FILES))
    if workers > 1:
        with WorkerPool(workers, _no_setup) as pool:  # workers die with this process
            yield from pool.map(summarize_file, tasks, chunksize=32)
    else:
        yield from map(summarize_file, tasks)


class _Names:
    """Module names of paths, each folder's package chain looked up once."""

    def __init__(self) -> None:
        self.packages: dict[Path, str] = {}

    def package(self, folder: Path) -> str:
        """Dotted package of ``folder`` ("" when it is no package)."""
        if folder not in self.packages:
            outer = self.package(folder.parent) if folder.parent != folder else ""
            inside = (folder / "__init__.py").is_file()
            self.packages[folder] = "" if not inside else (
                f"{outer}.{folder.name}" if outer else folder.name)
        return self.packages[folder]

    def of(self, path: str) -> str:
        """What ``modulesummary.module_name`` says, with fewer stats."""
        absolute = Path(path).absolute()
        package = self.package(absolute.parent)
        if absolute.name == "__init__.py":
            return package or absolute.stem
        return f"{package}.{absolute.stem}" if package else absolute.stem


# -- the store ---------------------------------------------------------------------------

class SummaryStore:
    """Summaries of earlier runs' files, and the scope last solved from them."""

    def __init__(self, folder: Path | None):
        """The store in ``folder``; None: in memory only (``--no-cache``)."""
        self.folder = folder
        self.records: dict[str, IndexEntry] = {}
        self.solved: tuple[str, dict[str, list[str]]] | None = None
        self.summarised: list[str] = []  # paths summarised by the last ``traced`` (tests)
        self._load_index()

    @property
    def index_path(self) -> Path | None:
        """The index file (None in memory)."""
        return None if self.folder is None else cache_file(self.folder, "callgraph", [])

    def _load_index(self) -> None:
        if self.index_path is None:
            return
        loaded = load_json(self.index_path)
        if not isinstance(loaded, dict):
            return
        try:
            for path, (mtime, size, sha, name, summary) in loaded["files"].items():
                self.records[path] = IndexEntry((int(mtime), int(size), str(sha)), str(name),
                                            None if summary is None else str(summary))
            key, traced = loaded["traced"] or (None, None)
            if isinstance(key, str) and isinstance(traced, dict):
                self.solved = (key, traced)
        except (KeyError, TypeError, ValueError):
            self.records, self.solved = {}, None  # damaged: start afresh
        # Both files are in use while the index is: the summaries are read whenever the
        # scope must be solved again (see the module's docstring).
        touch(self.index_path, self.index_path.with_suffix(".marshal"))

    def traced(self, paths: list[str], jobs: int | None = None) -> dict[str, frozenset[str]]:
        """``CallGraph.traced()`` over ``paths``, from the store where it can be; keyed by
        the paths as given (the store keys files by absolute path)."""
        given = {os.path.abspath(path): path for path in paths}
        absolute = list(given)
        module_names = _Names()
        tasks = []
        for path in absolute:
            name = module_names.of(path)
            record = self.records.get(path)
            if record is None or record.name != name or not _stat_matches(path, record):
                known = record.stamp[2] if record is not None and record.name == name else None
                tasks.append((path, name, known))
        fresh: dict[str, Plain] = {}
        self.summarised = []
        for answer in _summarize_all(tasks, jobs):
            self._take(answer, fresh)
        key = digest(canonical(sorted(
            (p, r.name, r.summary) for p in absolute if (r := self.records.get(p)) is not None)
        ).encode())
        if tasks:  # the index will be saved: without the files of other runs now gone
            self._forget_missing(set(absolute))
        if self.solved is not None and self.solved[0] == key:
            if tasks:
                self._save_index()
            solved = self.solved[1]
        else:
            solved = {path: sorted(functions) for path, functions
                      in self._solve(absolute, fresh, jobs).items()}
            self.solved = (key, solved)
            self._save_index()
        return {given[path]: frozenset(functions) for path, functions in solved.items()
                if path in given}

    def parsed(self, paths: AbstractSet[str]) -> dict[str, str]:
        """The content digest of each of ``paths`` (as given to ``traced``) whose summary
        was made: the files ``ast.parse`` took, as they were then."""
        found = {}
        for path in paths:
            record = self.records.get(os.path.abspath(path))
            if record is not None and record.summary is not None:
                found[path] = record.stamp[2]
        return found

    def _forget_missing(self, present: AbstractSet[str]) -> None:
        """Drop the records of files outside ``present`` that no longer exist (a deleted
        tree, a renamed file): the index and the summaries would otherwise keep them."""
        for path in [p for p in self.records if p not in present and not os.path.exists(p)]:
            del self.records[path]

    def _take(self, answer: Summarized, fresh: dict[str, Plain]) -> None:
        """IndexEntry a worker's answer."""
        if answer.record is None:
            self.records.pop(answer.path, None)
            return
        record = answer.record
        if answer.same:  # only the stamp changed
            record = IndexEntry(record.stamp, record.name, self.records[answer.path].summary)
        else:
            self.summarised.append(answer.path)
            if answer.body is not None:
                fresh[answer.path] = answer.body
        self.records[answer.path] = record

    def _solve(self, paths: list[str], fresh: dict[str, Plain], jobs: int | None
               ) -> dict[str, frozenset[str]]:
        """Load the stored summaries, summarise what is missing, solve, store them."""
        bodies = self._load_bodies()
        # A fresh body's digest is its record's (worked out where it was summarised).
        bodies.update((path, (self._digest_of(path), body)) for path, body in fresh.items())
        missing: list[tuple[str, str, str | None]] = []
        for path in paths:
            record = self.records.get(path)
            if record is not None and record.summary is not None and (
                    bodies.get(path, ("",))[0] != record.summary):
                missing.append((path, record.name, None))
        for answer in _summarize_all(missing, jobs):  # a damaged or lost body
            self._take(answer, fresh)
            if answer.body is not None:
                bodies[answer.path] = (self._digest_of(answer.path), answer.body)
        wanted = set(paths)
        graph = CallGraph(from_plain(body) for path, (_, body) in bodies.items()
                          if path in wanted and (r := self.records.get(path)) is not None
                          and r.summary is not None)
        traced = graph.traced()
        self._save_bodies(bodies)
        return traced

    def _digest_of(self, path: str) -> str:
        record = self.records[path]
        assert record.summary is not None  # recorded with the body it was taken with
        return record.summary

    def _load_bodies(self) -> dict[str, tuple[str, Plain]]:
        if self.index_path is None:
            return {}
        try:
            # Read whole, then decoded: ``marshal.load`` on a file reads it piece by piece,
            # four times slower (0.5 s for transformers' 17 MB at every solve).
            loaded = marshal.loads(self.index_path.with_suffix(".marshal").read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _save_bodies(self, bodies: dict[str, tuple[str, Plain]]) -> None:
        if self.folder is None or self.index_path is None:
            return
        kept = {path: body for path, body in bodies.items() if path in self.records}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.index_path.with_suffix(".marshal"), marshal.dumps(kept))
        except OSError:
            pass  # a cache is an optimisation

    def _save_index(self) -> None:
        if self.folder is None or self.index_path is None:
            return
        files = {path: [*r.stamp, r.name, r.summary] for path, r in self.records.items()}
        save_json(self.folder, self.index_path, {"files": files, "traced": self.solved})


def _stat_matches(path: str, record: IndexEntry) -> bool:
    try:
        return stat_matches(record.stamp, os.stat(path))
    except OSError:
        return False


# -- the function scopes over many files ------------------------------------------------------

def traced_functions(paths: list[str], jobs: int | None = None,
                     store: SummaryStore | None = None) -> dict[str, frozenset[str]]:
    """Qualified names of the functions Dynamo may trace, by path, over the files ``paths``;
    with a ``store``, from the summaries cached on disk where the files did not change."""
    return (store or SummaryStore(None)).traced(paths, jobs)


def function_scopes(paths: list[str], needed: AbstractSet[str], profiles: Iterable[str] = (),
                    jobs: int | None = None, store: SummaryStore | None = None
                    ) -> dict[str, dict[str, frozenset[str]]]:
    """For each scope name in ``needed`` ("traced", "profiled"): qualified names by path."""
    scopes: dict[str, dict[str, frozenset[str]]] = {}
    if Scope.TRACED in needed:
        scopes[Scope.TRACED] = traced_functions(paths, jobs, store)
    if Scope.PROFILED in needed:
        scopes[Scope.PROFILED] = profiled_functions(paths, profiles)
    return scopes
