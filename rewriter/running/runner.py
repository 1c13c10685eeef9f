"""Run the engine over many files: cache, parallel workers, one result per file.

One bad file never stops the others: every failure becomes that file's result.
What processing a file needs (the job and its loaded rules) is a ``Context``: built once
in-process for small runs (a pre-commit hook's handful of files, no workers to start),
or once per worker by the pool's initializer, and read there through ``worker_context``.
Reading and writing files is ``files.py``'s job, progress bars ``progress.py``'s, black
``formatting.py``'s; the records a run returns are ``results.py``'s.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.facts.scopes import FUNCTION_SCOPES, possible_scopes
from ..matching.rules import Rule, load_pack
from ..rewriting.engine import RewriteError, RewriteOptions, parse, rewrite_source, select_rules
from ..syntax.enums import Scope
from ..workspace import files
from ..workspace.files import WriteError
from ..workspace.sources import Source, SourceError, decode, encode
from ..workspace.workers import WorkerPool, collector_tuned
from ..workspace.worklist import Item, MirrorLink, Skip, Work
from .cache import Cache, Entry, digest, scope_facts, stamp_of
from .diffs import unified_diff
from .formatting import format_with_black
from .progress import file_progress, line_progress
from .results import EditRecord, FileResult, Mode, NoteRecord, Status
from .summaries import SummaryStore, function_scopes

if TYPE_CHECKING:  # libcst (which apply.py needs) loads only when a file has edits
    from collections.abc import Iterator, Sequence

    from ..rewriting.apply import ChunkApplier, Spread

PARALLEL_THRESHOLD = 16  # fewer files than this run in-process
LONG_FILE = 1_000_000  # characters: a file this long shows its own progress, line by line

HARD_LINKED = ("has {n} hard links: not rewritten in place (replacing it would split the "
               "links, writing into it would not be atomic); use --diff or --out")


# scope name -> path -> qualified names of the functions in it (callgraph.py)
Scopes = dict[str, dict[str, frozenset[str]]]


@dataclass(frozen=True)
class Job:
    """What to do with each file; sent to every worker once."""

    packs: tuple[str, ...]
    options: RewriteOptions = field(default_factory=RewriteOptions)
    mode: Mode = Mode.WRITE
    out_root: Path | None = None
    black: bool = False
    ignore: tuple[str, ...] = ()
    scopes: Scopes = field(default_factory=dict)
    # Files the call graph parsed for this run (path -> content digest): one that still has
    # that content and that no rule concerns is not parsed again for its syntax errors.
    parsed: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Callers may give the packs as a list and the mode as its word ("check").
        object.__setattr__(self, "packs", tuple(self.packs))
        object.__setattr__(self, "mode", Mode(self.mode))


@dataclass(frozen=True)
class Context:
    """What processing one file needs: the job and its rules, as they will run."""

    job: Job
    rules: list[Rule]
    show_progress: bool = False  # a long file's line bar (in-process runs on a terminal)
    spread_jobs: int = 1  # processes sharing the edits of one long file (in-process runs)

    @classmethod
    def load(cls, job: Job, show_progress: bool = False, spread_jobs: int = 1) -> Context:
        """Load the job's packs (once per process)."""
        return cls(job, selected_rules(job), show_progress, spread_jobs)


_worker_context: Context | None = None  # set once in each worker by its initializer


def _start_worker(job: Job) -> None:
    """The pool's initializer: load this worker's context."""
    global _worker_context
    _worker_context = Context.load(job)


def worker_context() -> Context:
    """This worker process's context (the pool's initializer loaded it)."""
    if _worker_context is None:
        raise RuntimeError("no rewrite context in this process: the worker pool's "
                           "initializer sets it")
    return _worker_context


def selected_rules(job: Job) -> list[Rule]:
    """The job's rules, as they will run."""
    rules = [r for spec in job.packs for r in load_pack(spec).rules if r.id not in job.ignore]
    return select_rules(rules, job.options)


def needed_scopes(job: Job) -> set[str]:
    """The function scopes (``traced``, ``profiled``) the job's rules use."""
    return {name for rule in selected_rules(job) for name in rule.scope
            if name in FUNCTION_SCOPES}


def prepare_scopes(job: Job, paths: list[Path], jobs: int | None = None,
                   context: Sequence[Path] = (), store: SummaryStore | None = None) -> Job:
    """``job`` with the function scopes (``traced``, ``profiled``) its rules use, computed
    over every file of the run and the ``context`` files (the rest of their packages): a
    call in one file can put a function of another in scope. ``store`` caches summaries."""
    needed = needed_scopes(job)
    if not needed:
        return job
    graph = [str(p) for p in [*paths, *context]]
    store = store or SummaryStore(None)
    with collector_tuned():
        scopes = function_scopes(graph, needed, job.options.profiles, jobs, store)
    processed = {str(p) for p in paths}
    return replace(job, scopes={name: {path: names for path, names in by_path.items()
                                       if path in processed}
                                for name, by_path in scopes.items()},
                   parsed=store.parsed(processed))


def could_match(text: str, rules: list[Rule]) -> list[Rule]:
    """The rules whose required tokens occur in ``text`` (a cheap pre-pass; each token is
    searched for once)."""
    found: dict[str, bool] = {}

    def occurs(token: str) -> bool:
        if token not in found:
            found[token] = token in text
        return found[token]

    return [r for r in rules if r.could_match(occurs)]


def process(context: Context, path: Path, destination: Path | None) -> FileResult:
    """Do the whole job for one file: read, rewrite, write.

    Never raises for a bad file: every failure, writing included, is that file's error.
    """
    try:
        return _process(context, path, destination)
    except Exception as error:  # noqa: BLE001 - one bad file never stops the others
        return _failed(path, error)


def _process(context: Context, path: Path, destination: Path | None) -> FileResult:
    data, info = files.read_source(path)
    if files.is_generated(data):
        return FileResult(str(path), Status.GENERATED)
    content = digest(data)
    try:
        source = decode(data)
        # The call graph read the file as UTF-8: its parse vouches for this text only when
        # the file is UTF-8 too (a latin-1 file's bytes may read otherwise).
        parses = source.encoding == "utf-8" and context.job.parsed.get(str(path)) == content
        new_text, edits, notes = _rewrite(source, context.rules, str(path), context, parses)
    except Exception as error:  # noqa: BLE001 - still copied, so the --out tree is complete
        copy = (destination, data, info) if destination is not None else None
        return _failed(path, error, copy)
    # The stamp of the text processed: the cache keeps this outcome, notes included.
    stamp = stamp_of(info, content)
    if not edits:
        result = FileResult(str(path), Status.UNCHANGED, stamp=stamp, notes=notes)
        return result if destination is None else _with_copy(result, destination, data, info)
    result = FileResult(str(path), Status.CHANGED, edits=edits, notes=notes, stamp=stamp)
    new_data = encode(source, new_text)
    mode = context.job.mode
    if mode is Mode.DIFF:
        return replace(result, diff=_diff(path, source.text, new_text))
    if mode is Mode.WRITE:
        if info.st_nlink > 1:
            return FileResult(str(path), Status.SKIPPED,
                              error=HARD_LINKED.format(n=info.st_nlink))
        files.write_checked(path, new_data)
        # Not cached: the new text's notes and facts are not known until it is processed.
        return replace(result, written=True, stamp=None)
    if mode is Mode.OUT and destination is not None:
        return _with_copy(result, destination, new_data, info)
    return result


def _diff(path: Path, old: str, new: str) -> str:
    return unified_diff(old, new, f"{path}\t(original)", f"{path}\t(rewritten)")


def _with_copy(result: FileResult, destination: Path, data: bytes,
               source: os.stat_result) -> FileResult:
    """``result`` once ``data`` is at ``destination`` in the --out tree."""
    written = files.write_copy(destination, data, source)
    return replace(result, output=str(destination), written=result.written or written)


def _failed(path: Path, error: Exception,
            copy: tuple[Path, bytes, os.stat_result] | None = None) -> FileResult:
    """The error result for ``path``; with ``copy``, the original still goes to --out."""
    if isinstance(error, SourceError | RewriteError | WriteError):
        message = str(error)
    elif isinstance(error, RecursionError):
        message = "too deeply nested to analyse"
    else:
        message = f"internal error ({type(error).__name__}: {error}); please report it"
    result = FileResult(str(path), Status.ERROR, error=message,
                        line=getattr(error, "line", 0), col=getattr(error, "col", 0))
    if copy is None:
        return result
    try:
        return _with_copy(result, *copy)
    except WriteError as failure:
        return replace(result, output=str(copy[0]), error=f"{message}; and {failure}")


def rewrite_file(context: Context, source: Source, path: str
                 ) -> tuple[str, tuple[EditRecord, ...], tuple[NoteRecord, ...]]:
    """One file's text rewritten as a run rewrites it: its rules, its slice of the job's
    function scopes (``path`` as the scopes name it); the new text, edits and notes. Raises
    for a file that cannot be rewritten (``RewriteError``: it does not parse). The import
    hook (``hook.py``) rewrites the modules it loads through this."""
    return _rewrite(source, context.rules, path, context)


def _rewrite(source: Source, rules: list[Rule], path: str, context: Context,
             parses: bool = False) -> tuple[str, tuple[EditRecord, ...], tuple[NoteRecord, ...]]:
    options = _file_options(context.job, path)
    # A rule that no code of this file is in the scope of can neither edit nor note. The
    # call graph that parsed this very text traced every `forward` method it holds.
    forward_traced = parses and Scope.TRACED in (options.function_scopes or {})
    possible = possible_scopes(source.text, {name for rule in rules for name in rule.scope},
                               options.function_scopes, forward_traced)
    candidates = could_match(source.text, [rule for rule in rules
                                           if not rule.scope.isdisjoint(possible)])
    if not candidates:
        if not parses:  # ``parses``: the call graph parsed this very content already
            parse(source.text)  # still report syntax errors in files no rule concerns
        return source.text, (), ()
    long = context.show_progress and len(source.text) >= LONG_FILE
    lines = source.text.count("\n") + 1 if long else 0
    with line_progress(lines, long) as (progress, applying):
        rewrite = rewrite_source(source.text, candidates, options,
                                 progress=progress, applying=applying,
                                 spread=_spread_for(source.text, context.spread_jobs))
    notes = tuple(NoteRecord(n.rule, n.line, n.col, n.message) for n in rewrite.notes)
    if not rewrite.changed:
        return source.text, (), notes
    text = format_with_black(rewrite.text) if context.job.black else rewrite.text
    return text, tuple(EditRecord.of(n, e) for n, e in rewrite.edits), notes


def _file_options(job: Job, path: str) -> RewriteOptions:
    """The job's options with the functions of ``path`` that are in its function scopes."""
    return file_options(job.options, job.scopes, path)


def file_options(options: RewriteOptions, scopes: Scopes, path: str) -> RewriteOptions:
    """``options`` with the functions of ``path`` that are in the run's function ``scopes``
    (``{scope: {path: function names}}``, computed over the whole run)."""
    if not scopes:
        return options
    return replace(options, function_scopes={
        name: by_path.get(path, frozenset()) for name, by_path in scopes.items()})


def _spread_for(text: str, jobs: int) -> Spread | None:
    """How a long file's edits are shared among worker processes, if they are.

    Only in-process runs (a few files: the pool's workers cannot start processes of their
    own) and only with fork, whose workers inherit the edits instead of receiving them.
    """
    if jobs < 2 or len(text) < LONG_FILE or multiprocessing.get_start_method() != "fork":
        return None

    def spread(function: ChunkApplier, chunks: list[tuple[int, int]]
               ) -> Iterator[list[tuple[str, list[str]]]]:
        with WorkerPool(min(jobs, len(chunks)), _no_setup) as pool:
            yield from pool.map(function, chunks)
    return spread


def _no_setup() -> None:
    """Workers applying a long file's edits need nothing set up: they inherit it."""


def _process_work(work: Work) -> FileResult:
    return process(worker_context(), work.path, work.destination)


def run(items: list[Item], job: Job, cache: Cache | None, jobs: int | None = None,
        progress: bool = False) -> list[FileResult]:
    """Carry out the planned ``items``; return one result per item, in order."""
    results: dict[int, FileResult] = {}
    todo: list[tuple[int, Work]] = []
    for index, item in enumerate(items):
        if isinstance(item, Skip):
            results[index] = FileResult(str(item.path), Status.SKIPPED, error=item.reason)
        elif isinstance(item, MirrorLink):
            results[index] = _mirror(item)
        elif cache is not None and (cached := _cached(item, job, cache)) is not None:
            results[index] = cached
        else:
            todo.append((index, item))
    with collector_tuned():
        results.update(_run_work(todo, job, jobs, progress))
    if cache is not None:
        for index, result in results.items():
            item = items[index]
            if isinstance(item, Work) and item.destination is None:
                cache.record(item.path, _entry(result, job))
        cache.save()
    return [results[index] for index in range(len(items))]


def _cached(work: Work, job: Job, cache: Cache) -> FileResult | None:
    """The cached outcome of ``work``'s file, when its content and facts are those recorded
    (never for an --out copy; a file rules edit only for --check, which writes nothing)."""
    if work.destination is not None:
        return None
    entry = cache.fresh(work.path, scope_facts(job.scopes, str(work.path)))
    if entry is None:
        return None
    outcome: Any = entry.outcome
    try:
        changed, edits, notes = outcome
        result = FileResult(str(work.path), Status.CHANGED if changed else Status.UNCHANGED,
                            edits=tuple(EditRecord(*e) for e in edits),
                            notes=tuple(NoteRecord(*n) for n in notes), stamp=entry.stamp)
    except (TypeError, ValueError):
        return None  # not an outcome this version stores: a miss
    return None if changed and job.mode is not Mode.CHECK else result


def _entry(result: FileResult, job: Job) -> Entry | None:
    """What the cache keeps of ``result``: nothing unless its outcome may be replayed."""
    if result.stamp is None or result.status not in (Status.UNCHANGED, Status.CHANGED):
        return None
    outcome = [result.status is Status.CHANGED, [astuple(e) for e in result.edits],
               [astuple(n) for n in result.notes]]
    return Entry(result.stamp, scope_facts(job.scopes, result.path), outcome)


def _run_work(todo: list[tuple[int, Work]], job: Job, jobs: int | None,
              progress: bool) -> dict[int, FileResult]:
    workers = min(jobs or os.cpu_count() or 1, len(todo))
    if workers > 1 and len(todo) >= PARALLEL_THRESHOLD:
        # Largest files first, in small chunks, so no worker is left with the big ones.
        todo.sort(key=lambda pair: -_size(pair[1].path))
        with WorkerPool(workers, _start_worker, (job,)) as pool:
            outcomes = pool.map(_process_work, [work for _, work in todo],
                                chunksize=max(1, len(todo) // (workers * 32)))
            return dict(zip([index for index, _ in todo],
                            file_progress(outcomes, len(todo), progress)))
    # In-process: a long file's line bar too, on a terminal, and its edits shared by `jobs`.
    context = Context.load(job, show_progress=progress and sys.stderr.isatty(),
                           spread_jobs=jobs or os.cpu_count() or 1)
    return {index: process(context, work.path, work.destination)
            for index, work in file_progress(todo, len(todo), progress)}


def _mirror(link: MirrorLink) -> FileResult:
    """Recreate a symlink in the --out tree; a failure is that link's error."""
    try:
        written = files.write_symlink(link.destination, link.target)
    except OSError as error:
        return FileResult(str(link.path), Status.ERROR, output=str(link.destination),
                          error=str(WriteError(link.destination, error.strerror or str(error))))
    return FileResult(str(link.path), Status.UNCHANGED, output=str(link.destination),
                      written=written)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
