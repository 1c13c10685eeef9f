"""Rewrite installed packages as they are imported: ``eqrewrite run``, ``install_import_hook``.

A ``sys.meta_path`` finder (``ImportHook``) hands every ``.py`` module of the named
packages to its own loader (``HookLoader``), which compiles the module's rewritten text in
memory: nothing is ever written into the package (not even ``__pycache__``). The rules see
the same scopes as ``eqrewrite PACKAGE_DIR``: the hook is built like a run's ``Job``, whose
``traced`` scope ``runner.prepare_scopes`` computes over every file of the packages (the
call graph's summaries kept in the user cache, ``summaries.py``), and each module is
rewritten by ``runner.rewrite_file`` with its slice of those scopes.

Lines stay the original file's. The helper block a rewrite inserts after the imports is
taken out of the module's text: it is compiled on its own, from a file of the cache
folder, and one statement placed at the first statement's line (after the docstring and
``__future__`` imports) executes it in the module's namespace (``define_helpers``) before
the rest of the module runs, however the code object is run (import, ``runpy``). Every other
line of the rewritten text is mapped back to the original line it stems from (a diff of
the two texts' lines) and the module is compiled from its ``ast`` with those line
numbers; a rewrite that makes several lines into fewer (a whole ``if`` into one ``return``)
puts the new lines at the first of the original ones, and the report lists such places as
``approximate`` lines. ``__file__`` and ``co_filename`` are the original path, so
tracebacks, ``inspect.getsource``, coverage and debuggers show the original file.

Each compiled module (rewritten or not) is cached in the user cache folder (``hook/``),
keyed by the tool build, the packs, the options, the file's path and content digest and
its slice of the scopes: a second run compiles nothing and rewrites nothing. An entry is
touched each time it is used; entries, helper files and call-graph files unused for
``cache.UNUSED_DAYS`` days (a package upgraded, a file edited, eqrewrite upgraded: their old keys
are never asked for again) are removed, checked at most once a day when a hook is installed.
A module that cannot be rewritten is loaded unmodified, with a warning naming its file and
line; a module that does not parse raises Python's own ``SyntaxError``. Modules of the
packages imported before the hook was installed are reported as missed. This module never
imports torch (the helpers it executes do, in the user's process, where the packages import
it anyway).

Dynamo switches (``dynamo_config``, ``--dynamo-config``, ``--dynamic-sizes``) are set on
``torch._dynamo.config`` as soon as that module has run: the hook wraps its loader
(``switches.SwitchingLoader``), or sets them at installation when it is already in
``sys.modules``, so they hold before any of the program's code compiles. A switch the module
does not have is a ``SwitchError`` naming it and its close matches.
"""

from __future__ import annotations

import ast
import atexit
import difflib
import importlib.util
import json
import marshal
import os
import runpy
import sys
import time
import traceback
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from pathlib import Path
from typing import Any

from . import __version__
from .matching.rules import load_pack
from .rewriting.engine import RewriteOptions
from .running.cache import (
    cache_file,
    canonical,
    digest,
    prune,
    scope_facts,
    touch,
    user_cache_dir,
)
from .running.results import Mode
from .running.runner import Context, Job, prepare_scopes, rewrite_file
from .running.summaries import SummaryStore
from .switches import DYNAMO_CONFIG, DynamoSwitches, SwitchingLoader
from .syntax.lines import split_lines
from .syntax.marks import END_MARKER, MARKER
from .workspace import files
from .workspace.config import DEFAULT_INCLUDE
from .workspace.discovery import discover
from .workspace.sources import decode

FORMAT = 1  # of the cached entries; part of their key
DEFAULT_RULES = ("graphbreaks",)


class HookError(Exception):
    """The hook cannot be installed as asked (a package that is not installed, a Dynamo
    switch that does not exist...)."""


@dataclass
class ModuleRecord:
    """What the hook did with one module (a record of ``--report``'s ``modules``)."""

    module: str
    file: str
    status: str  # rewritten, unchanged, generated, error, missed
    cached: bool = False
    edits: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    approximate: list[list[int]] = field(default_factory=list)  # original line ranges
    error: str | None = None
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        """The record as the report writes it."""
        record: dict[str, Any] = {"module": self.module, "file": self.file,
                                  "status": self.status, "cached": self.cached,
                                  "edits": len(self.edits)}
        if self.status == "rewritten":
            record["lines"] = "approximate" if self.approximate else "exact"
            if self.approximate:
                record["approximate_lines"] = self.approximate
        if self.error is not None:
            record["error"], record["line"] = self.error, self.line
        return record


@dataclass(frozen=True)
class _Compiled:
    """A module ready to run, as the cache keeps it."""

    code: types.CodeType
    record: ModuleRecord
    helper_file: str = ""  # the helper block's file in the cache (empty: no helpers)
    helper_text: str = ""


_HELPER_CODES: dict[str, types.CodeType] = {}  # helper file -> its code (this process)


def define_helpers(namespace: dict[str, Any], helper_file: str) -> None:
    """Define a rewritten module's helpers in its ``namespace``: its first statement calls
    this (the helper block, cut out of its text so that its lines stay the original's)."""
    code = _HELPER_CODES.get(helper_file)
    if code is None:
        with open(helper_file, "rb") as handle:
            code = compile(handle.read(), helper_file, "exec", dont_inherit=True)
        _HELPER_CODES[helper_file] = code
    exec(code, namespace)  # noqa: S102 - the helpers' own source, written by this module


class HookLoader(SourceFileLoader):
    """Loads one module of a hooked package: its code from the hook, never a ``.pyc``
    (and never writes one); its source (``get_source``) and ``__file__`` stay the file's."""

    def __init__(self, fullname: str, path: str, hook: ImportHook):
        super().__init__(fullname, path)
        self.hook = hook

    def get_code(self, fullname: str) -> types.CodeType:
        return self.hook.code_for(fullname, self.path)


class ImportHook(MetaPathFinder):
    """The ``sys.meta_path`` finder of ``install_import_hook``; ``report()`` says what it did."""

    def __init__(self, packages: Sequence[str], rules: Sequence[str] = DEFAULT_RULES,
                 cache_dir: Path | None = None, jobs: int | None = 1,
                 ignore: Sequence[str] = (), quiet: bool = False,
                 dynamo_config: Mapping[str, object] | None = None, unsafe: bool = False):
        if not packages:
            raise HookError("no package to rewrite: name at least one")
        self.packages = tuple(dict.fromkeys(packages))
        for name in self.packages:
            if not name or not all(part.isidentifier() for part in name.split(".")):
                raise HookError(f"{name!r} is not a module name")
        self.switches = DynamoSwitches(dynamo_config or {})
        loaded = sys.modules.get(DYNAMO_CONFIG)
        if loaded is not None and self.switches.pending:
            self.switches.check(loaded)  # refused now, before the call graph is computed
        self.quiet = quiet
        self.folder = (cache_dir or user_cache_dir()) / "hook"
        prune(self.folder, ("modules", "helpers"))
        packs = [load_pack(spec) for spec in (rules or DEFAULT_RULES)]
        job = Job(tuple(p.path for p in packs), RewriteOptions(unsafe=unsafe), Mode.CHECK,
                  ignore=tuple(ignore))
        self.records: dict[str, ModuleRecord] = {}
        self.missed = self._already_imported()
        roots = [self._root(name) for name in dict.fromkeys(
            n.split(".")[0] for n in self.packages)]
        base = Path(os.path.abspath(roots[0])).parent
        found = list(discover(roots, list(DEFAULT_INCLUDE), [], base, use_gitignore=False))
        # The scopes name files as discovered; modules are looked up by absolute path.
        self.paths = {os.path.abspath(p): str(p) for p in found}
        started = time.perf_counter()
        job = prepare_scopes(job, found, jobs, (), SummaryStore(self.folder))
        self.seconds = {"call_graph": time.perf_counter() - started, "rewrite": 0.0,
                        "cached": 0.0}
        self.context = Context.load(job)
        self.key_parts = [str(FORMAT), *(p.digest for p in packs), canonical(job.options),
                          canonical(sorted(job.ignore))]
        self.packs = [p.path for p in packs]
        self.cache_hits = self.cache_misses = 0

    # -- finding ------------------------------------------------------------------------

    def _hooked(self, fullname: str) -> bool:
        return any(fullname == n or fullname.startswith(n + ".") for n in self.packages)

    def _already_imported(self) -> list[ModuleRecord]:
        missed = []
        for name, module in sorted(sys.modules.items()):
            if self._hooked(name):
                record = ModuleRecord(name, str(getattr(module, "__file__", None) or ""),
                                      "missed", error="imported before the hook was installed")
                missed.append(record)
        if missed:
            names = ", ".join(r.module for r in missed[:5]) + (
                f" and {len(missed) - 5} more" if len(missed) > 5 else "")
            self._warn(f"{len(missed)} module(s) of the hooked packages were imported before "
                       f"the hook was installed and are not rewritten: {names}")
        return missed

    def _root(self, name: str) -> Path:
        """The folder (or single file) of the installed top-level package ``name``."""
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError) as error:
            raise HookError(f"cannot find the package {name!r}: {error}") from None
        if spec is None:
            raise HookError(f"no installed package or module {name!r}")
        if spec.submodule_search_locations:
            return Path(list(spec.submodule_search_locations)[0])
        if spec.origin is None or not spec.origin.endswith(".py"):
            raise HookError(f"{name!r} is not Python source ({spec.origin})")
        return Path(spec.origin)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> ModuleSpec | None:
        hooked = self._hooked(fullname)
        switching = fullname == DYNAMO_CONFIG and self.switches.pending
        if not (hooked or switching):
            return None
        spec = self._other_spec(fullname, path, target)
        if spec is None:
            return None
        if hooked and isinstance(spec.loader, SourceFileLoader) and spec.origin is not None:
            spec.loader = HookLoader(fullname, spec.origin, self)
            spec.cached = None  # no .pyc belongs to this code
        if switching and spec.loader is not None:
            spec.loader = SwitchingLoader(spec.loader, self.switches)
        return spec

    def _other_spec(self, fullname: str, path: Sequence[str] | None,
                    target: types.ModuleType | None) -> ModuleSpec | None:
        """The spec the finders after this one give ``fullname``."""
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def switch_if_loaded(self) -> None:
        """Set the Dynamo switches now if ``torch._dynamo.config`` is already imported (the
        Python API called after ``import torch._dynamo``); else its import sets them."""
        loaded = sys.modules.get(DYNAMO_CONFIG)
        if loaded is not None and self.switches.pending:
            self.switches.apply(loaded, "installation")

    # -- loading ------------------------------------------------------------------------

    def code_for(self, fullname: str, path: str) -> types.CodeType:
        """The code of module ``fullname`` at ``path``: rewritten, from the cache if it can."""
        started = time.perf_counter()
        data = Path(path).read_bytes()
        absolute = os.path.abspath(path)
        scoped = self.paths.get(absolute, absolute)
        entry = cache_file(self.folder / "modules", "module", [
            *self.key_parts, absolute, digest(data),
            scope_facts(self.context.job.scopes, scoped)]).with_suffix(".marshal")
        compiled = self._load(entry, fullname, path)
        if compiled is not None:
            self.cache_hits += 1
            if compiled.record.status == "error":
                self._warn(f"{path}:{compiled.record.line}: cannot rewrite "
                           f"({compiled.record.error}); loaded unmodified")
        else:
            self.cache_misses += 1
            compiled = self._compile(fullname, path, scoped, data)
            self._store(entry, compiled)
        self.seconds["cached" if compiled.record.cached else "rewrite"] += (
            time.perf_counter() - started)
        self.records[fullname] = compiled.record
        return compiled.code

    def _compile(self, fullname: str, path: str, scoped: str, data: bytes) -> _Compiled:
        record = ModuleRecord(fullname, path, "unchanged")
        if files.is_generated(data):
            record.status = "generated"
            return _Compiled(_compile_original(data, path, record), record)
        try:
            source = decode(data)
            text, edits, notes = rewrite_file(self.context, source, scoped)
        except Exception as error:  # noqa: BLE001 - loaded unmodified (SourceError too)
            return self._unmodified(data, path, record, error)
        record.notes = [{"rule": n.rule, "line": n.line, "col": n.col, "message": n.message}
                        for n in notes]
        if not edits:
            return _Compiled(_compile_original(data, path, record), record)
        record.status = "rewritten"
        record.edits = [{"rule": e.rule, "line": e.start_line, "col": e.start_col,
                         "end_line": e.end_line, "round": e.round} for e in edits]
        try:
            body, block = split_helper_block(text)
            helper_file = self._helper_file(block) if block else ""
            code = compile_mapped(source.text, body, path, helper_file, record)
        except Exception as error:  # noqa: BLE001 - a rewrite that does not compile
            record.edits, record.approximate = [], []
            return self._unmodified(data, path, record, error)
        return _Compiled(code, record, helper_file, block)

    def _unmodified(self, data: bytes, path: str, record: ModuleRecord,
                    error: Exception) -> _Compiled:
        """The original code of a module that could not be rewritten (a SyntaxError when it
        does not compile either, as a plain import would raise)."""
        line = int(getattr(error, "line", 0) or getattr(error, "lineno", 0) or 0)
        record.status, record.error, record.line = "error", f"{error}", line
        self.records[record.module] = record
        code = _compile_original(data, path, record)
        self._warn(f"{path}:{line}: cannot rewrite ({error}); loaded unmodified")
        return _Compiled(code, record)

    def _helper_file(self, block: str) -> str:
        folder = self.folder / "helpers"
        target = folder / f"helpers-{digest(block.encode())[:20]}.py"
        if not target.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            files.write_atomic(target, block.encode("utf-8"))
        return str(target)

    def _load(self, entry: Path, fullname: str, path: str) -> _Compiled | None:
        try:
            stored = marshal.loads(entry.read_bytes())
            version, code, record, helper_file, helper_text = stored
            if version != FORMAT or not isinstance(code, types.CodeType):
                return None
            if helper_file and self._helper_file(helper_text) != helper_file:
                return None  # the cache folder moved: compile again
            touch(entry, helper_file)
            return _Compiled(code, ModuleRecord(**{**json.loads(record), "module": fullname,
                                                   "file": path, "cached": True}),
                             helper_file, helper_text)
        except (OSError, EOFError, ValueError, TypeError):
            return None

    def _store(self, entry: Path, compiled: _Compiled) -> None:
        fields = {k: v for k, v in compiled.record.__dict__.items()
                  if k not in ("module", "file", "cached")}
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            files.write_atomic(entry, marshal.dumps((
                FORMAT, compiled.code, json.dumps(fields), compiled.helper_file,
                compiled.helper_text)))
        except (OSError, ValueError):
            pass  # a cache is an optimisation

    # -- reporting ----------------------------------------------------------------------

    def _warn(self, message: str) -> None:
        if not self.quiet:
            print(f"eqrewrite: warning: {message}", file=sys.stderr)

    def report(self) -> dict[str, Any]:
        """What the hook did: modules, their edits (original lines), notes, missed modules."""
        modules = sorted(self.records.values(), key=lambda r: r.module)
        edits = [{"module": r.module, "file": r.file, **e} for r in modules for e in r.edits]
        notes = [{"module": r.module, "file": r.file, **n} for r in modules for n in r.notes]
        count = {status: sum(r.status == status for r in modules)
                 for status in ("rewritten", "unchanged", "generated", "error")}
        return {
            "version": __version__, "packages": list(self.packages), "packs": self.packs,
            "unsafe": self.context.job.options.unsafe, "cache": str(self.folder),
            "dynamo_config": self.switches.to_json(),
            "summary": {"modules": len(modules), **count, "missed": len(self.missed),
                        "edits": len(edits), "cache_hits": self.cache_hits,
                        "cache_misses": self.cache_misses,
                        # wall seconds: the traced scope at installation, then loading the
                        # modules that were rewritten (or compiled) and those from the cache
                        **{f"{k}_s": round(v, 3) for k, v in self.seconds.items()}},
            "modules": [r.to_json() for r in modules],
            "edits": edits, "notes": notes,
            "missed": [r.to_json() for r in self.missed],
        }

    def write_report(self, path: str | os.PathLike[str]) -> None:
        """Write ``report()`` as JSON (atomically)."""
        files.write_atomic(Path(path), (json.dumps(self.report(), indent=1) + "\n").encode())

    def uninstall(self) -> None:
        """Stop rewriting modules imported from now on (those loaded stay as they are)."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def _compile_original(data: bytes, path: str, record: ModuleRecord) -> types.CodeType:
    """The module's own code, as a plain import compiles it (its SyntaxError included)."""
    try:
        return compile(data, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        record.status, record.error, record.line = "error", f"{error.msg}", error.lineno or 0
        raise


# -- helper block and line numbers --------------------------------------------------------

def split_helper_block(text: str) -> tuple[str, str]:
    """``text`` without its helper block, and the block (marker lines included; "" when
    there is none). The block is top-level statements between ``MARKER`` and ``END_MARKER``."""
    lines = split_lines(text)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == MARKER]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END_MARKER]
    if not starts or not ends or ends[-1] < starts[0]:
        return text, ""
    start, end = starts[0], ends[-1] + 1
    return "".join(lines[:start] + lines[end:]), "".join(lines[start:end])


def line_map(original: str, body: str) -> tuple[list[int], list[list[int]]]:
    """For each line of ``body`` (index 0 unused), the original line it stems from; and the
    original line ranges whose lines a rewrite made into a different number of lines."""
    old, new = split_lines(original), split_lines(body)
    mapping = [0] * (len(new) + 1)
    approximate: list[list[int]] = []
    # Most of a file is the same: only the middle goes through the diff.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (tail < min(len(old), len(new)) - head
           and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]):
        tail += 1
    for j in range(head):
        mapping[j + 1] = j + 1
    for k in range(tail):
        mapping[len(new) - k] = len(old) - k
    matcher = difflib.SequenceMatcher(None, old[head:len(old) - tail],
                                      new[head:len(new) - tail], autojunk=False)
    last = max(len(old), 1)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        if tag == "delete":
            continue
        if tag == "insert":  # new lines: at the original line that follows them
            for j in range(j1, j2):
                mapping[j + 1] = min(i1 + 1, last)
            continue
        if tag == "replace" and i2 - i1 != j2 - j1:
            approximate.append([i1 + 1, i2])
        for j in range(j1, j2):
            mapping[j + 1] = i1 + 1 + min(j - j1, i2 - i1 - 1)
    return mapping, approximate


def compile_mapped(original: str, body: str, path: str, helper_file: str,
                   record: ModuleRecord) -> types.CodeType:
    """``body`` (a rewritten module without its helper block) compiled with the original
    text's line numbers; with ``helper_file``, its first statement defines the helpers."""
    tree = ast.parse(body, path)
    mapping, record.approximate = line_map(original, body)
    if mapping[1:] != list(range(1, len(mapping))):
        for node in ast.walk(tree):
            line = getattr(node, "lineno", None)
            if line is None or "lineno" not in node._attributes:
                continue
            line = mapping[line]
            end = max(mapping[getattr(node, "end_lineno", None) or 0], line)
            col, end_col = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", 0)
            # Python refuses a one-line node that ends before it starts.
            _place(node, line, end, col, max(end_col or 0, col) if end == line else end_col)
    if helper_file:
        _define_helpers_first(tree, helper_file)
    return compile(tree, path, "exec", dont_inherit=True)


def _define_helpers_first(tree: ast.Module, helper_file: str) -> None:
    """Put ``define_helpers(globals(), helper_file)`` after the docstring and ``__future__``
    imports, at the next statement's line (it binds no name)."""
    at = 0
    for index, statement in enumerate(tree.body):
        docstring = index == 0 and isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Constant) and isinstance(statement.value.value, str)
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        if not (docstring or future):
            break
        at = index + 1
    call = ast.parse(f"__import__({__name__!r}, None, None, ('define_helpers',))"
                     f".define_helpers(globals(), {helper_file!r})").body[0]
    anchor = tree.body[min(at, len(tree.body) - 1)] if tree.body else None
    line = anchor.lineno if anchor is not None else 1
    for node in ast.walk(call):
        if "lineno" in node._attributes:
            _place(node, line, line, 0, 0)
    tree.body.insert(at, call)


def _place(node: ast.AST, line: int, end_line: int, col: int, end_col: int | None) -> None:
    node.lineno, node.end_lineno = line, end_line  # type: ignore[attr-defined]
    node.col_offset, node.end_col_offset = col, end_col  # type: ignore[attr-defined]


# -- the entry points ---------------------------------------------------------------------

def install_import_hook(packages: Sequence[str], rules: Sequence[str] = DEFAULT_RULES, *,
                        report: str | os.PathLike[str] | None = None,
                        cache_dir: str | os.PathLike[str] | None = None,
                        jobs: int | None = 1, ignore: Sequence[str] = (),
                        quiet: bool = False,
                        dynamo_config: Mapping[str, object] | None = None,
                        unsafe: bool = False) -> ImportHook:
    """Rewrite the installed ``packages`` (top-level or dotted names) with the rule packs
    ``rules`` as they are imported from now on; call it before importing them.

    The ``traced`` scope is computed over each whole package here (cached in the user
    cache folder, or ``cache_dir``); ``jobs`` worker processes summarise it on a cold
    cache (1: in this process, safe in any program). ``report``: a JSON file written at
    exit (``ImportHook.report()``). ``dynamo_config``: ``torch._dynamo.config`` switches
    (``DYNAMIC_SIZES``...), set now if that module is imported, else as soon as it is; an
    unknown one raises ``SwitchError`` then. ``unsafe``: also run the rules marked unsafe
    (opt-in, as ``eqrewrite --unsafe``). Returns the installed hook."""
    hook = ImportHook(packages, rules, Path(cache_dir) if cache_dir is not None else None,
                      jobs, ignore, quiet, dynamo_config, unsafe)
    hook.switch_if_loaded()  # before installing: a refusal leaves no hook behind
    sys.meta_path.insert(0, hook)
    if report is not None:  # where the program's working folder was at installation
        atexit.register(hook.write_report, Path(report).absolute())
    return hook


def run_with_import_hook(target: str, args: Sequence[str], packages: Sequence[str],
                         rules: Sequence[str] = DEFAULT_RULES, *, module: bool = False,
                         report: str | os.PathLike[str] | None = None,
                         cache_dir: str | os.PathLike[str] | None = None,
                         jobs: int | None = None, ignore: Sequence[str] = (),
                         dynamo_config: Mapping[str, object] | None = None,
                         unsafe: bool = False) -> int:
    """Run the script ``target`` (or, with ``module``, the module, as ``python -m`` does)
    with ``args`` in this process, the ``packages`` rewritten as they are imported and the
    ``dynamo_config`` switches set; return its exit status. Raises ``HookError``,
    ``SwitchError`` or ``RuleError`` before running anything, and ``SwitchError`` when the
    program imported ``torch._dynamo.config`` and it has no such switch (no traceback is
    printed)."""
    sys.path[0] = os.getcwd() if module else os.path.dirname(os.path.abspath(target))
    hook = install_import_hook(packages, rules, report=report, cache_dir=cache_dir,
                               jobs=jobs, ignore=ignore, dynamo_config=dynamo_config,
                               unsafe=unsafe)
    sys.argv = [target, *args]
    status = _run_program(target, module, hook)
    if hook.switches.error is not None:  # the command's error, not the program's
        raise hook.switches.error
    return status


def _run_program(target: str, module: bool, hook: ImportHook) -> int:
    """Run the script or module as ``python`` would; its exit status."""
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(os.path.abspath(target), run_name="__main__")
    except SystemExit as stop:
        return _exit_status(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as error:  # noqa: BLE001 - reported as Python reports it
        if error is not hook.switches.error:  # a refused switch: the caller reports it
            _print_user_traceback(error)
        return 1
    return 0


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(error: BaseException) -> None:
    """The traceback from the script's own frames on (not runpy's or this module's)."""
    tb = error.__traceback__
    skipped = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) in skipped:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb)
