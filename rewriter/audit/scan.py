"""Audit files: detect the sites, resolve them, turn them into finding records.

One file at a time (``audit_text``), or many with the rewriter's worker pool
(``audit_files``); like the rewriter, one bad file never stops the others, it becomes an
error record. A file that cannot hold a traced function (no ``forward``, nothing compiled,
and the scope is not ``everywhere``) is not even parsed. What auditing needs (the options
and the loaded rules) is a ``ScanContext``: passed along in-process, or loaded once per
worker by the pool's initializer and read there through ``worker_context``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..analysis.facts.scopes import FUNCTION_SCOPES
from ..matching.matcher import Comments
from ..matching.rules import Rule, load_pack, packaged_packs
from ..rewriting.engine import RewriteError, parse
from ..running.cache import Cache, Entry, Stamp, canonical, digest, scope_facts, stamp_of
from ..running.summaries import SummaryStore, function_scopes
from ..syntax.enums import Scope
from ..workspace.files import is_generated
from ..workspace.sources import SourceError, decode
from ..workspace.workers import WorkerPool, collector_tuned
from .catalogue import PATTERNS
from .detect import Detector, Site, position
from .resolve import Resolution, Resolver

PARALLEL_THRESHOLD = 24  # fewer files than this are audited in-process
# Text a file needs to hold a traced function: a forward method defined here, or the word
# compile/optimize (torch.compile, torch._dynamo.optimize; not "compiling"). Each pattern
# starts with a literal, which re finds fast; the word boundary before it is checked apart
# (a leading \b makes re try every position: ten times as slow over a package).
_SCOPE_TEXT = {"forward": (re.compile(r"def\s+forward\b"),),
               "compiled": (re.compile(r"compile\b"), re.compile(r"optimize\b"))}


@dataclass(frozen=True)
class ScanOptions:
    """What to look for and with which rules; sent to every worker once."""

    packs: tuple[str, ...]
    scope: frozenset[str] = frozenset({"forward", "compiled"})
    rule_scope: frozenset[Scope] | None = None  # --scope also restricts the rules, as rewriting
    assume_tensor_params: bool = False
    ignore: frozenset[str] = frozenset()       # pattern ids
    trust_scalar_annotations: bool = True  # int/float/... annotations prove a number
    # scope name ("traced") -> file path -> qualified names in it, over every audited file
    # (callgraph.function_scopes); a scope missing here is computed per module.
    function_scopes: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)


@dataclass
class FileAudit:
    """One file's finding records (ids not yet assigned), or its error."""

    file: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    suppressed: int = 0
    error: dict[str, Any] | None = None
    stamp: Stamp | None = None  # the audited text's, when the cache may keep this outcome


@dataclass(frozen=True)
class ScanContext:
    """What auditing a file needs: the options and the rules, loaded once per process."""

    options: ScanOptions
    rules: list[Rule]        # the packs' rules, selected as for rewriting
    kinds: frozenset[str]    # kinds some packaged pack offers (a finding may point to one)

    @classmethod
    def load(cls, options: ScanOptions) -> ScanContext:
        """Load the packs."""
        from ..rewriting.engine import RewriteOptions, select_rules

        rules = [r for spec in options.packs for r in load_pack(spec).rules]
        selected = select_rules(rules, RewriteOptions(
            assume_tensor_params=options.assume_tensor_params, scope=options.rule_scope))
        kinds = frozenset(r.kind for p in packaged_packs().values()
                          for r in load_pack(str(p)).rules)
        return cls(options, selected, kinds)


_worker_context: ScanContext | None = None  # this process's, once loaded for a pool


def _prepare_worker(options: ScanOptions) -> None:
    """A worker's initializer: the packs (unless a forked worker inherited them loaded),
    and fewer garbage collections (below)."""
    global _worker_context
    if _worker_context is None or _worker_context.options != options:
        _worker_context = ScanContext.load(options)
    gc.freeze()
    gc.set_threshold(*_THRESHOLDS)


def worker_context() -> ScanContext:
    """This worker process's context (its initializer loaded it)."""
    if _worker_context is None:
        raise RuntimeError("no audit context in this process: the worker pool's initializer "
                           "sets it")
    return _worker_context


# Parsing allocates millions of nodes, few of them in cycles; Python's default thresholds
# collect every 700 allocations and scan the growing old generations again and again
# (a fifth of the audit's time). Trees are freed by reference counting anyway.
_THRESHOLDS = (50_000, 50, 100)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    previous = gc.get_threshold()
    gc.set_threshold(*_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def audit_text(context: ScanContext, text: str, label: str,
               path: str | None = None) -> FileAudit:
    """Audit one module's source; ``label`` is its path relative to the project, ``path``
    the key of its functions in the options' ``function_scopes``."""
    options = context.options
    result = FileAudit(label)
    scopes = {name: by_path.get(path or label, frozenset())
              for name, by_path in options.function_scopes.items()}
    if not _may_trace(text, options.scope, scopes):
        return result
    tree = parse(text)
    detector = Detector(tree, text, options.scope, options.assume_tensor_params, scopes)
    # The facts only test for the substring: most models say is_torchdynamo_compiling.
    detector.facts.text.may_compile = may_compile(text)
    # Tokenizing is slow: only files that mention eqrewrite can suppress a finding.
    comments = Comments(text) if "eqrewrite" in text else None
    sites = []
    for site in detector.run():
        if site.pattern in options.ignore:
            continue
        line, _, end_line, _ = position(site.node)
        span = (line, 0, end_line, 0)
        if comments is not None and comments.suppressed(site.pattern, span):
            result.suppressed += 1
        else:
            sites.append(site)
    if not sites:
        return result
    candidates = [r for r in context.rules if r.could_match(text)]
    resolver = Resolver(detector, text, candidates, options.assume_tensor_params, sites,
                        context.rules, context.kinds, options.trust_scalar_annotations)
    resolutions = [resolver.resolve(site) for site in sites]
    _fill_after(text, tree, sites, resolutions)
    result.findings = [_record(site, resolution, resolver, label)
                       for site, resolution in zip(sites, resolutions)]
    return result


def _may_trace(text: str, scope: frozenset[str], scopes: dict[str, frozenset[str]]) -> bool:
    if "everywhere" in scope:
        return True
    if any(name in scope and names for name, names in scopes.items()):
        return True  # a function here is reached from traced code in another file
    return any(_has_word(text, pattern) for name in scope for pattern in _SCOPE_TEXT.get(name, ()))


def may_compile(text: str) -> bool:
    """Whether the text names compile/optimize as a word: else nothing here is compiled."""
    return any(_has_word(text, pattern) for pattern in _SCOPE_TEXT["compiled"])


def _has_word(text: str, pattern: re.Pattern[str]) -> bool:
    """``pattern`` matches where a word starts."""
    return any(m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")
               for m in pattern.finditer(text))


def _fill_after(text: str, tree: ast.Module, sites: list[Site],
                resolutions: list[Resolution]) -> None:
    """What the rewrite writes for each edit that fixes a site: the engine's own libcst
    application (``rewriting.apply.apply_edits``) of those first-round edits sets each
    ``after``. A file the engine cannot rewrite keeps none of its fixes: the rewrite would
    refuse it."""
    from ..rewriting.apply import apply_edits  # libcst loads only when a site has a fix

    edits = list({id(r.edit): r.edit for r in resolutions if r.edit is not None}.values())
    if not edits:
        return
    try:
        apply_edits(text, edits, tree)
    except Exception as error:  # noqa: BLE001 - the rewrite reports it as this file's error
        for site, resolution in zip(sites, resolutions):
            if resolution.edit is not None:
                resolution.why_not = {"rules": [resolution.edit.rule.id], "stage": "apply",
                                      "reason": f"the rewrite of this file fails: {error}",
                                      "remedy": "please report it"}
                resolution.edit = None
                resolution.fix = "setting" if PATTERNS[site.pattern].settings else "manual"


def _record(site: Site, resolution: Resolution, resolver: Resolver, label: str) -> dict[str, Any]:
    pattern = PATTERNS[site.pattern]
    line, col, end_line, end_col = resolver.span(site.node)
    record = {"pattern": site.pattern, "file": label, "line": line, "column": col + 1,
              "end_line": end_line, "end_column": end_col + 1, "function": site.function,
              "code": site.snippet, "confidence": site.confidence, "fix": resolution.fix,
              "rule": None, "rewrite": None, "why_not": resolution.why_not,
              "settings": [s.as_dict() for s in pattern.settings], "advice": pattern.advice}
    edit = resolution.edit
    if edit is not None:
        start = {"line": edit.span[0], "column": edit.span[1] + 1}
        end = {"line": edit.span[2], "column": edit.span[3] + 1}
        record["rule"] = edit.rule.id
        record["rewrite"] = {"before": edit.before, "after": edit.after, "start": start,
                             "end": end, "helpers": sorted(edit.helpers)}
    return record


def audit_file(context: ScanContext, path: Path, label: str) -> FileAudit:
    """Read, decode and audit one file; every failure is this file's error record."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
        stamp = stamp_of(stat, digest(data))
        if is_generated(data):
            return FileAudit(label, stamp=stamp)
        return replace(audit_text(context, decode(data).text, label, str(path)), stamp=stamp)
    except OSError as error:
        return _failed(label, f"cannot read: {error.strerror or error}")
    except (SourceError, RewriteError) as error:
        return _failed(label, str(error), getattr(error, "line", 0), getattr(error, "col", 0))
    except RecursionError:
        return _failed(label, "too deeply nested to analyse")
    except Exception as error:  # noqa: BLE001 - one bad file never stops the others
        return _failed(label, f"internal error ({type(error).__name__}: {error}); please "
                       "report it")


def _failed(label: str, message: str, line: int = 0, col: int = 0) -> FileAudit:
    return FileAudit(label, error={"file": label, "line": line, "column": col,
                                   "message": message})


def _audit_pair(pair: tuple[str, str]) -> FileAudit:
    """In a worker: one ``(path, label)``."""
    return audit_file(worker_context(), Path(pair[0]), pair[1])


def audit_files(files: list[tuple[Path, str]], options: ScanOptions,
                jobs: int | None = None, cache_folder: Path | None = None,
                context: Sequence[Path] = ()) -> list[FileAudit]:
    """Audit ``(path, label)`` pairs, in parallel for many files; results in order.

    The call graph of ``--scope traced`` covers the ``context`` files too (the rest of the
    packages); with a ``cache_folder``, its summaries and each file's outcome are cached
    there (keyed by the file's content and its slice of the function scopes)."""
    with collector_tuned():
        return _audit_files(files, options, jobs, cache_folder, context)


def _audit_files(files: list[tuple[Path, str]], options: ScanOptions, jobs: int | None,
                 cache_folder: Path | None, context: Sequence[Path]) -> list[FileAudit]:
    pairs = [(str(path), label) for path, label in files]
    needed = {name for name in options.scope if name in FUNCTION_SCOPES}
    if needed and not options.function_scopes:
        store = None if cache_folder is None else SummaryStore(cache_folder)
        scopes = function_scopes([path for path, _ in pairs] + [str(p) for p in context],
                                 needed, (), jobs, store)
        audited = {path for path, _ in pairs}
        options = replace(options, function_scopes={
            name: {p: names for p, names in by_path.items() if p in audited}
            for name, by_path in scopes.items()})
    cache = None if cache_folder is None else Cache(cache_folder, _key(options), "audit")
    results: dict[int, FileAudit] = {}
    for index, (path, label) in enumerate(pairs):
        if cache is not None and (cached := _cached(cache, path, label, options)) is not None:
            results[index] = cached
    todo = [index for index in range(len(pairs)) if index not in results]
    results.update(zip(todo, _audit_all([pairs[i] for i in todo], options, jobs)))
    if cache is not None:
        for index in todo:
            cache.record(Path(pairs[index][0]), _entry(results[index], pairs[index][0], options))
        cache.save()
    return [results[i] for i in range(len(pairs))]


def _key(options: ScanOptions) -> list[str]:
    """The audit cache's key: the packs' content and every option but the function scopes
    (each file's slice of those is in its own entry)."""
    packs = [digest(Path(pack).read_bytes()) for pack in options.packs]
    return [*packs, canonical(replace(options, packs=(), function_scopes={}))]


def _cached(cache: Cache, path: str, label: str, options: ScanOptions) -> FileAudit | None:
    """The cached audit of ``path`` when its content, label and facts are those recorded."""
    entry = cache.fresh(Path(path), scope_facts(options.function_scopes, path))
    outcome: Any = None if entry is None else entry.outcome
    if not (isinstance(outcome, list) and len(outcome) == 3 and outcome[0] == label):
        return None
    return FileAudit(label, list(outcome[1]), int(outcome[2]))


def _entry(audit: FileAudit, path: str, options: ScanOptions) -> Entry | None:
    """What the cache keeps of ``audit``: nothing for an error (it may be the disk's)."""
    if audit.stamp is None or audit.error is not None:
        return None
    return Entry(audit.stamp, scope_facts(options.function_scopes, path),
                 [audit.file, audit.findings, audit.suppressed])


def _audit_all(pairs: list[tuple[str, str]], options: ScanOptions,
               jobs: int | None) -> list[FileAudit]:
    """Audit ``pairs``, in a pool of workers when there are many."""
    workers = min(jobs or os.cpu_count() or 1, len(pairs))
    if workers > 1 and len(pairs) >= PARALLEL_THRESHOLD:
        return _audit_in_pool(pairs, options, workers)
    context = ScanContext.load(options)
    with _fewer_collections():
        return [audit_file(context, Path(path), label) for path, label in pairs]


def _audit_in_pool(pairs: list[tuple[str, str]], options: ScanOptions,
                   workers: int) -> list[FileAudit]:
    global _worker_context
    _worker_context = ScanContext.load(options)  # forked workers start with it loaded
    # Largest files first, in small chunks, so that no worker is left with the big ones.
    order = sorted(range(len(pairs)), key=lambda i: -_size(pairs[i][0]))
    with WorkerPool(workers, _prepare_worker, (options,)) as pool:
        done = pool.map(_audit_pair, [pairs[i] for i in order],
                        chunksize=max(1, len(pairs) // (workers * 32)))
        results = dict(zip(order, done))
    return [results[i] for i in range(len(pairs))]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
