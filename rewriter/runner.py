"""Run the engine over many files: cache, parallel workers, writes, one result per file.

One bad file never stops the others: every failure becomes that file's result.
Workers load the rule packs once each; small runs (a pre-commit hook's handful of
files) stay in-process to avoid the cost of starting workers.
"""

from __future__ import annotations

import difflib
import os
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import files
from .cache import Cache, Stamp, digest
from .callgraph import function_scopes
from .engine import RewriteError, parse, rewrite_source, select_rules
from .engine import RewriteOptions as Options
from .facts import FUNCTION_SCOPES
from .files import WriteError
from .rules import Rule, load_pack
from .sources import Source, SourceError, decode, encode
from .workers import WorkerPool
from .worklist import Item, MirrorLink, Skip, Work

GENERATED_MARKER = b"@" b"generated"  # split so this file is not itself marked
GENERATED_WINDOW = 2048  # bytes from the top of a file searched for the marker
PARALLEL_THRESHOLD = 16  # fewer files than this run in-process
LONG_FILE = 1_000_000  # characters: a file this long shows its own progress, line by line


@dataclass
class Job:
    """What to do with each file; sent to every worker once."""

    packs: list[str]
    options: Options = field(default_factory=Options)
    mode: str = "write"  # write | check | diff | out
    out_root: Path | None = None
    black: bool = False
    ignore: tuple[str, ...] = ()
    # scope name -> path -> qualified names of the functions in it (callgraph.py)
    scopes: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)


@dataclass
class FileResult:
    """The outcome for one file."""

    path: str
    status: str  # changed | unchanged | error | generated | skipped
    edits: list[dict] = field(default_factory=list)
    error: str | None = None  # the cause of an error, or why a file was skipped
    line: int = 0
    col: int = 0
    diff: str = ""
    written: bool = False  # whether a file was written: the source, or its --out copy
    output: str | None = None  # where --out puts the file (written or already up to date)
    stamp: Stamp | None = None  # set when the file is now known clean
    notes: list[dict] = field(default_factory=list)  # graph breaks left alone, and why


HARD_LINKED = ("has {n} hard links: not rewritten in place (replacing it would split the "
               "links, writing into it would not be atomic); use --diff or --out")

_rules: list[Rule] = []
_job: Job | None = None
_show_progress = False  # in-process runs on a terminal


def _prepare(job: Job) -> None:
    global _rules, _job
    _rules, _job = selected_rules(job), job


def selected_rules(job: Job) -> list[Rule]:
    """The job's rules, as they will run."""
    rules = [r for spec in job.packs for r in load_pack(spec).rules if r.id not in job.ignore]
    return select_rules(rules, job.options)


def prepare_scopes(job: Job, paths: list[Path], jobs: int | None = None) -> None:
    """Compute the function scopes (``traced``, ``profiled``) the job's rules use, over
    every file of the run: a call in one file can put a function of another in scope."""
    needed = {name for rule in selected_rules(job) for name in rule.scope
              if name in FUNCTION_SCOPES}
    if needed:
        job.scopes = function_scopes([str(p) for p in paths], needed, job.options.profiles,
                                     jobs)


def could_match(text: str, rules: list[Rule]) -> list[Rule]:
    """The rules whose required tokens all occur in ``text`` (a cheap pre-pass)."""
    return [r for r in rules if r.could_match(text)]


def process(path: Path, destination: Path | None) -> FileResult:
    """Do the whole job for one file as the prepared job says: read, rewrite, write.

    Never raises for a bad file: every failure, writing included, is that file's error.
    """
    try:
        return _process(path, destination)
    except Exception as error:  # noqa: BLE001 - one bad file never stops the others
        return _failed(path, error)


def _process(path: Path, destination: Path | None) -> FileResult:
    assert _job is not None
    data, info = _read(path)
    if GENERATED_MARKER in data[:GENERATED_WINDOW]:
        return FileResult(str(path), "generated")
    try:
        source = decode(data)
        new_text, edits, notes = _rewrite(source, _rules, str(path))
    except Exception as error:  # noqa: BLE001 - still copied, so the --out tree is complete
        copy = (destination, data, info) if destination is not None else None
        return _failed(path, error, copy)
    if not edits:
        # A file with notes is not cached as clean: its notes are printed on every run.
        clean = None if notes else (info.st_mtime_ns, info.st_size, digest(data))
        result = FileResult(str(path), "unchanged", stamp=clean, notes=notes)
        if destination is not None:
            _write_out(result, destination, data, info)
        return result
    result = FileResult(str(path), "changed", edits=edits, notes=notes)
    new_data = encode(source, new_text)
    if _job.mode == "diff":
        result.diff = "".join(difflib.unified_diff(
            source.text.splitlines(keepends=True), new_text.splitlines(keepends=True),
            fromfile=f"{path}\t(original)", tofile=f"{path}\t(rewritten)"))
    elif _job.mode == "write":
        if info.st_nlink > 1:
            return FileResult(str(path), "skipped", error=HARD_LINKED.format(n=info.st_nlink))
        _write(path, new_data)
        after = path.stat()
        result.written = True
        result.stamp = (after.st_mtime_ns, after.st_size, digest(new_data))
    elif _job.mode == "out" and destination is not None:
        _write_out(result, destination, new_data, info)
    return result


def _read(path: Path) -> tuple[bytes, os.stat_result]:
    try:
        return path.read_bytes(), path.stat()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def _write(target: Path, data: bytes, mode: int | None = None,
           shown: Path | None = None) -> None:
    """Write ``target`` safely; any failure is a WriteError naming ``shown`` (when given)."""
    try:
        files.check_writable(target)
        files.write_atomic(target, data, mode)
    except OSError as error:
        raise WriteError(shown, error.strerror or str(error)) from None


def _write_out(result: FileResult, destination: Path, data: bytes,
               source: os.stat_result) -> None:
    """Put ``data`` at ``destination`` with the source's mode, unless it is there already."""
    result.output = str(destination)
    mode = stat.S_IMODE(source.st_mode)
    try:
        current = destination.lstat()
        same = stat.S_ISREG(current.st_mode) and destination.read_bytes() == data
    except OSError:
        same = False
    if not (same and stat.S_IMODE(current.st_mode) == mode):
        _write(destination, data, mode, shown=destination)
        result.written = True


def _failed(path: Path, error: Exception,
            copy: tuple[Path, bytes, os.stat_result] | None = None) -> FileResult:
    """The error result for ``path``; with ``copy``, the original still goes to --out."""
    if isinstance(error, SourceError | RewriteError | WriteError):
        message = str(error)
    elif isinstance(error, RecursionError):
        message = "too deeply nested to analyse"
    else:
        message = f"internal error ({type(error).__name__}: {error}); please report it"
    result = FileResult(str(path), "error", error=message, line=getattr(error, "line", 0),
                        col=getattr(error, "col", 0))
    if copy is not None:
        try:
            _write_out(result, *copy)
        except WriteError as failure:
            result.error += f"; and {failure}"
    return result


def _rewrite(source: Source, rules: list[Rule], path: str
             ) -> tuple[str, list[dict], list[dict]]:
    candidates = could_match(source.text, rules)
    if not candidates:
        parse(source.text)  # still report syntax errors in files no rule concerns
        return source.text, [], []
    options = _job.options
    if _job.scopes:
        options = replace(options, function_scopes={
            name: by_path.get(path, frozenset()) for name, by_path in _job.scopes.items()})
    with _line_progress(source.text) as (progress, applying):
        rewrite = rewrite_source(source.text, candidates, options, progress=progress,
                                 applying=applying)
    notes = [{"rule": n.rule, "line": n.line, "col": n.col, "message": n.message}
             for n in rewrite.notes]
    if not rewrite.changed:
        return source.text, [], notes
    text = rewrite.text
    if _job.black:
        text = _format_with_black(text)
    records = [{"rule": e.rule.id, "round": n, "start": {"line": e.span[0], "col": e.span[1] + 1},
                "end": {"line": e.span[2], "col": e.span[3] + 1}, "before": e.before,
                "after": e.after, "safety": e.rule.safety} for n, e in rewrite.edits]
    return text, records, notes


@contextmanager
def _line_progress(text: str):
    """A progress bar on stderr for a long file, fed by the engine round by round."""
    if not (_show_progress and len(text) >= LONG_FILE):
        yield None, None
        return
    from tqdm import tqdm

    with tqdm(total=text.count("\n") + 1, unit="line", file=sys.stderr, leave=False) as bar:
        stage = [""]

        def show(label: str, line: int) -> None:
            if label != stage[0]:  # each round reads the whole file, then applies its edits
                stage[0] = label
                bar.reset()
                bar.set_description(label, refresh=False)
            bar.update(line - bar.n)

        yield (lambda round_number, line: show(f"long file, round {round_number}", line),
               lambda round_number, line: show(f"long file, round {round_number}, applying",
                                               line))


def _format_with_black(text: str) -> str:
    import black

    try:
        return black.format_str(text, mode=black.Mode())
    except black.InvalidInput as error:
        raise RewriteError(f"black could not format the rewritten file: {error}") from None


def _process_work(work: Work) -> FileResult:
    return process(work.path, work.destination)


def run(items: list[Item], job: Job, cache: Cache | None, jobs: int | None = None,
        progress: bool = False) -> list[FileResult]:
    """Carry out the planned ``items``; return one result per item, in order."""
    results: dict[int, FileResult] = {}
    todo: list[tuple[int, Work]] = []
    for index, item in enumerate(items):
        if isinstance(item, Skip):
            results[index] = FileResult(str(item.path), "skipped", error=item.reason)
        elif isinstance(item, MirrorLink):
            results[index] = _mirror(item)
        elif _fresh(item, cache):
            results[index] = FileResult(str(item.path), "unchanged",
                                        stamp=cache.lookup(item.path))
        else:
            todo.append((index, item))
    results.update(_run_work(todo, job, jobs, progress))
    if cache is not None:
        for index, result in results.items():
            if isinstance(items[index], Work) and items[index].destination is None:
                cache.record(items[index].path, result.stamp)
        cache.save()
    return [results[index] for index in range(len(items))]


def _fresh(work: Work, cache: Cache | None) -> bool:
    if cache is None or work.destination is not None:
        return False
    try:
        return cache.is_fresh(work.path, work.path.stat())
    except OSError:
        return False


def _run_work(todo: list[tuple[int, Work]], job: Job, jobs: int | None,
              progress: bool) -> dict[int, FileResult]:
    workers = min(jobs or os.cpu_count() or 1, len(todo))
    if workers > 1 and len(todo) >= PARALLEL_THRESHOLD:
        # Largest files first, in small chunks, so no worker is left with the big ones.
        todo.sort(key=lambda pair: -_size(pair[1].path))
        with WorkerPool(workers, _prepare, (job,)) as pool:
            outcomes = pool.map(_process_work, [work for _, work in todo],
                                chunksize=max(1, len(todo) // (workers * 32)))
            return dict(zip([index for index, _ in todo],
                            _with_progress(outcomes, len(todo), progress)))
    global _show_progress
    _prepare(job)
    _show_progress = progress and sys.stderr.isatty()  # a long file's bar, in-process only
    return {index: process(work.path, work.destination)
            for index, work in _with_progress(todo, len(todo), progress)}


def _mirror(link: MirrorLink) -> FileResult:
    """Recreate a symlink in the --out tree; a failure is that link's error."""
    result = FileResult(str(link.path), "unchanged", output=str(link.destination))
    try:
        result.written = files.write_symlink(link.destination, link.target)
    except OSError as error:
        result.status = "error"
        result.error = str(WriteError(link.destination, error.strerror or str(error)))
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _with_progress(items, total: int, enabled: bool):
    if not enabled or total < 50 or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, total=total, unit="file", file=sys.stderr, leave=False)
