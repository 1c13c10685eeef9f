"""Run the engine over many files: cache, parallel workers, writes, one result per file.

One bad file never stops the others: every failure becomes that file's result.
Workers load the rule packs once each; small runs (a pre-commit hook's handful of
files) stay in-process to avoid the cost of starting workers.
"""

from __future__ import annotations

import difflib
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .cache import Cache, Stamp, digest
from .engine import Options, RewriteError, parse, rewrite_source, select_rules
from .rules import Rule, load_pack
from .sources import Source, SourceError, decode, encode, write_atomic

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


@dataclass
class FileResult:
    """The outcome for one file."""

    path: str
    status: str  # changed | unchanged | error | generated
    edits: list[dict] = field(default_factory=list)
    error: str | None = None
    line: int = 0
    col: int = 0
    diff: str = ""
    stamp: Stamp | None = None  # set when the file is now known clean


_rules: list[Rule] = []
_job: Job | None = None
_show_progress = False  # in-process runs on a terminal


def _prepare(job: Job) -> None:
    global _rules, _job
    rules = [r for spec in job.packs for r in load_pack(spec).rules if r.id not in job.ignore]
    _rules, _job = select_rules(rules, job.options), job


def could_match(text: str, rules: list[Rule]) -> list[Rule]:
    """The rules whose required tokens all occur in ``text`` (a cheap pre-pass)."""
    return [r for r in rules if r.could_match(text)]


def process(path: Path, destination: Path | None) -> FileResult:
    """Rewrite one file as the prepared job says; never raises for bad input."""
    assert _job is not None
    shown = str(path)
    try:
        data = path.read_bytes()
        stat = path.stat()
    except OSError as error:
        return FileResult(shown, "error", error=f"cannot read: {error.strerror}")
    if GENERATED_MARKER in data[:GENERATED_WINDOW]:
        return FileResult(shown, "generated")
    try:
        source = decode(data)
        new_text, edits = _rewrite(source, _rules)
    except Exception as error:  # noqa: BLE001 - one bad file never stops the others
        if destination is not None:  # the written tree stays complete
            _copy_if_different(destination, data)
        if isinstance(error, SourceError | RewriteError):
            message = str(error)
        elif isinstance(error, RecursionError):
            message = "too deeply nested to analyse"
        else:
            message = f"internal error ({type(error).__name__}: {error}); please report it"
        return FileResult(shown, "error", error=message, line=getattr(error, "line", 0),
                          col=getattr(error, "col", 0))
    clean = (stat.st_mtime_ns, stat.st_size, digest(data))
    if not edits:
        if destination is not None:
            _copy_if_different(destination, data)
        return FileResult(shown, "unchanged", stamp=clean)
    result = FileResult(shown, "changed", edits=edits)
    new_data = encode(source, new_text)
    if _job.mode == "diff":
        result.diff = "".join(difflib.unified_diff(
            source.text.splitlines(keepends=True), new_text.splitlines(keepends=True),
            fromfile=f"{shown}\t(original)", tofile=f"{shown}\t(rewritten)"))
    elif _job.mode == "write":
        write_atomic(path, new_data)
        after = path.stat()
        result.stamp = (after.st_mtime_ns, after.st_size, digest(new_data))
    elif _job.mode == "out" and destination is not None:
        write_atomic(destination, new_data)
    return result


def _rewrite(source: Source, rules: list[Rule]) -> tuple[str, list[dict]]:
    candidates = could_match(source.text, rules)
    if not candidates:
        parse(source.text)  # still report syntax errors in files no rule concerns
        return source.text, []
    with _line_progress(source.text) as progress:
        rewrite = rewrite_source(source.text, candidates, _job.options, progress=progress)
    if not rewrite.changed:
        return source.text, []
    text = rewrite.text
    if _job.black:
        text = _format_with_black(text)
    records = [{"rule": e.rule.id, "round": n, "start": {"line": e.span[0], "col": e.span[1] + 1},
                "end": {"line": e.span[2], "col": e.span[3] + 1}, "before": e.before,
                "after": e.after, "safety": e.rule.safety} for n, e in rewrite.edits]
    return text, records


@contextmanager
def _line_progress(text: str):
    """A progress bar on stderr for a long file, fed by the engine round by round."""
    if not (_show_progress and len(text) >= LONG_FILE):
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=text.count("\n") + 1, unit="line", file=sys.stderr, leave=False) as bar:
        rounds = [0]

        def progress(round_number: int, line: int) -> None:
            if round_number != rounds[0]:  # each round reads the whole file again
                rounds[0] = round_number
                bar.reset()
                bar.set_description(f"long file, round {round_number}", refresh=False)
            bar.update(line - bar.n)
        yield progress


def _format_with_black(text: str) -> str:
    import black

    try:
        return black.format_str(text, mode=black.Mode())
    except black.InvalidInput as error:
        raise RewriteError(f"black could not format the rewritten file: {error}") from None


def _copy_if_different(destination: Path, data: bytes) -> None:
    if not destination.exists() or destination.read_bytes() != data:
        write_atomic(destination, data)


def _process_pair(pair: tuple[Path, Path | None]) -> FileResult:
    return process(*pair)


def run(files: list[tuple[Path, Path | None]], job: Job, cache: Cache | None,
        jobs: int | None = None, progress: bool = False) -> list[FileResult]:
    """Process ``(path, destination)`` pairs; return one result per path, in order."""
    results: dict[Path, FileResult] = {}
    todo = []
    for path, destination in files:
        try:
            fresh = cache is not None and destination is None and cache.is_fresh(
                path, path.stat())
        except OSError:
            fresh = False
        if fresh:
            results[path] = FileResult(str(path), "unchanged", stamp=cache.lookup(path))
        else:
            todo.append((path, destination))
    workers = min(jobs or os.cpu_count() or 1, len(todo))
    if workers > 1 and len(todo) >= PARALLEL_THRESHOLD:
        # Largest files first, in small chunks, so no worker is left with the big ones.
        todo.sort(key=lambda pair: -_size(pair[0]))
        with ProcessPoolExecutor(workers, initializer=_prepare, initargs=(job,)) as pool:
            outcomes = pool.map(_process_pair, todo,
                                chunksize=max(1, len(todo) // (workers * 32)))
            results.update(zip([p for p, _ in todo], _with_progress(outcomes, len(todo),
                                                                      progress)))
    else:
        global _show_progress
        _prepare(job)
        _show_progress = progress and sys.stderr.isatty()
        results.update((p, process(p, d)) for p, d in _with_progress(todo, len(todo), progress))
    if cache is not None:
        for path, result in results.items():
            cache.record(path, result.stamp)
        cache.save()
    return [results[path] for path, _ in files]


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
