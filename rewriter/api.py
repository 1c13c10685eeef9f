"""The rewriter's public API: what the oracle, the tests, the benchmarks and other tools use.

Everything outside ``eqrewrite.rewriter`` imports rewriter names from here only, so the
modules behind it can change shape without breaking their users (a test checks the import
graph). Nothing here imports torch or the oracle (the oracle's own function, ``oracle``, is
``eqrewrite.oracle.api``'s).

- the commands as functions (docs/api.md), the command line being a thin layer over them:
  ``rewrite`` (``eqrewrite PATH``) returns a ``RewriteReport`` and ``audit`` (``eqrewrite
  audit PATH``) an ``AuditReport``, the typed results the commands print; a bad argument,
  configuration or pack raises ``OptionError``, ``ConfigError``, ``RuleError``,
  ``PlanError`` or ``BaselineError`` (``USAGE_ERRORS``: what the commands exit 2 on);
- rule packs: ``load_pack``, ``load_packs``, ``packaged_packs``, ``select_rules``;
- one source text: ``rewrite_text`` returns a ``Rewrite`` (new text and ``Edit``s by round);
  ``rewrite_rounds`` keeps its rounds to replay it without some edits (``Rounds.without``);
- a run's results, as the command line's plugin steps see them (``RewriteRun``):
  ``FileResult`` (``Status``), its ``EditRecord``s and ``NoteRecord``s, the run's ``Mode``;
- files: ``discover_files``, ``decode``/``encode``/``write_atomic``, and
  ``write_checked`` (refuses read-only files, as a rewrite in place does; ``WriteError``);
- configuration: ``find_project_root``, ``load_config``;
- static facts the oracle needs to find targets: ``module_class_names``;
- the ``traced`` and ``profiled`` scopes (``FUNCTION_SCOPES``): ``traced_functions``,
  ``function_scopes``, and
  ``function_qualnames`` to name the functions a recorded run saw;
- the graph-break audit: ``WHAT_IF_SWITCHES`` (Dynamo switches and the breaks each may remove);
- installed packages rewritten as they are imported (``hook.py``): ``install_import_hook``
  (returns the ``ImportHook``, whose ``report()`` says what it rewrote) and
  ``run_with_import_hook`` (what ``eqrewrite run`` does), both taking Dynamo switches
  (``dynamo_config``: ``DYNAMIC_SIZES``, or ``KEY=VALUE`` texts read by
  ``parse_switches``, ``switches.py``); ``HookError``, ``SwitchError``; ``DynamoSwitches``
  checks switches against ``torch._dynamo.config`` (the dynamic audit's ``dynamo_config``).
"""

from __future__ import annotations

import ast
import difflib
import os
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analysis.facts import ModuleFacts
from .analysis.facts.definitions import definition_qualname
from .analysis.facts.scopes import FUNCTION_SCOPES, known_scopes
from .audit.catalogue import WHAT_IF as WHAT_IF_SWITCHES
from .audit.document import BaselineError
from .hook import HookError, ImportHook, install_import_hook, run_with_import_hook
from .matching.matcher import Edit, Span, find_edits, with_requirements
from .matching.rules import Rule, RuleError, RulePack, load_pack, packaged_packs, resolve_pack
from .rewriting.engine import MAX_ROUNDS, Rewrite, RewriteError, RewriteOptions, parse, select_rules
from .rewriting.engine import rewrite_source as rewrite_text
from .running.results import EditRecord, FileResult, Mode, NoteRecord, Status
from .running.summaries import function_scopes, traced_functions
from .switches import DYNAMIC_SIZES, DynamoSwitches, SwitchError, parse_switches
from .syntax.enums import Scope
from .syntax.lines import split_lines
from .workspace.config import Config, ConfigError, find_project_root, load_config
from .workspace.discovery import discover as discover_files
from .workspace.files import WriteError, write_atomic, write_checked
from .workspace.sources import Source, SourceError, decode, encode
from .workspace.worklist import PlanError

if TYPE_CHECKING:
    from .audit.config import AuditConfig
    from .running.runner import Job, Scopes

__all__ = [
    "FUNCTION_SCOPES", "Config", "ConfigError", "Edit", "EditRecord", "FileResult", "Mode",
    "HookError", "ImportHook", "install_import_hook", "run_with_import_hook",
    "DYNAMIC_SIZES", "DynamoSwitches", "SwitchError", "parse_switches",
    "NoteRecord", "Rewrite", "RewriteError", "RewriteOptions", "Rule", "Status",
    "RuleError", "RulePack", "Source", "SourceError", "WHAT_IF_SWITCHES", "apply_edit_subset",
    "RoundEdit", "Rounds", "decode", "discover_files", "encode", "find_project_root",
    "function_qualnames", "function_scopes", "load_config",
    "load_pack", "load_packs", "module_class_names", "packaged_packs", "parse", "resolve_pack",
    "rewrite_rounds", "rewrite_text", "select_rules", "traced_functions", "write_atomic",
    "WriteError", "write_checked",
    "rewrite", "RewriteReport", "audit", "AuditReport", "OptionError", "PlanError",
    "BaselineError", "USAGE_ERRORS",
]

PathArg = str | os.PathLike[str]


class OptionError(ValueError):
    """An argument ``rewrite`` or ``audit`` cannot take: no paths, a path that does not
    exist, an unknown mode, scope or rule id, ``out`` with a report-only mode, ``black``
    without black installed. The message is what the command line prints after ``error:``."""


# What the commands report as usage errors (exit 2): the API raises nothing else for a bad
# argument, configuration, rule pack, --out folder or baseline.
USAGE_ERRORS: tuple[type[Exception], ...] = (OptionError, ConfigError, RuleError, PlanError,
                                              BaselineError)


def apply_edit_subset(text: str, edits: list[Edit], tree: ast.Module | None = None) -> str:
    """``text`` with only ``edits`` (some of the edits one round found in it) applied, as
    the rewrite applies them: each edit's ``after`` becomes the text written in its place.
    ``tree``: ``text`` already parsed, if the caller has it."""
    from .rewriting.apply import apply_edits  # libcst loads only when needed

    return apply_edits(text, edits, tree) if edits else text


def rewrite_rounds(text: str, rules: list[Rule], options: RewriteOptions) -> Rounds:
    """Every edit rewriting ``text`` makes, in all the engine's rounds, ready to be replayed
    with some of them left out (``Rounds.without``; the oracle's rollback bisects them).

    ``rules`` are the run's selected rules; as the command line's runner does, only those
    whose tokens occur in ``text`` run (a rule cannot join in a later round)."""
    return Rounds(text, [r for r in rules if r.could_match(text)], options)


def load_packs(specs: list[str]) -> list[RulePack]:
    """Load and validate several packs (paths or packaged names); RuleError on the first bad one."""
    return [load_pack(spec) for spec in specs]


def module_class_names(tree: ast.Module) -> list[str]:
    """Names of the ``nn.Module`` subclasses a module defines (directly or through bases)."""
    return [c.name for c in ModuleFacts(tree).classes.module_classes]


def function_qualnames(tree: ast.Module) -> dict[str, tuple[str, int, int]]:
    """``qualname -> (name, first line, last line)`` for every function of a module; the
    first line is that of its first decorator, as in the function's code object."""
    found: dict[str, tuple[str, int, int]] = {}
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, chain = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = chain + (child,) if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else chain
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                last = child.end_lineno if child.end_lineno is not None else child.lineno
                found.setdefault(definition_qualname(inner), (child.name, first, last))
            stack.append((child, inner))
    return found


# -- the commands as functions: rewrite and audit (docs/api.md) ---------------------------------


@dataclass(frozen=True)
class RewriteReport:
    """What ``rewrite`` did: one ``FileResult`` per processed file, in the command's order,
    with the run's settings. The command line prints exactly this (``report.print_text``),
    or serialises it (``to_json``, ``to_sarif``)."""

    paths: tuple[Path, ...]
    root: Path                   # the project root (where pyproject.toml was looked for)
    mode: Mode                   # write, out, check or diff: what the run could write
    out: Path | None             # the --out tree, when there is one
    packs: tuple[RulePack, ...]  # the packs loaded
    rules: tuple[Rule, ...]      # the rules that ran (ignored and unsafe ones left out)
    options: RewriteOptions
    results: tuple[FileResult, ...]
    empty_folders: tuple[Path, ...] = ()  # given folders that hold no Python file
    scopes: Scopes = field(default_factory=dict)  # the traced/profiled functions, per file

    def options_for(self, path: str) -> RewriteOptions:
        """The options ``path`` was rewritten under: the run's, with its functions in the
        ``traced`` and ``profiled`` scopes as the whole run decided them."""
        from .running.runner import file_options

        return file_options(self.options, self.scopes, path)

    @property
    def changed(self) -> list[FileResult]:
        """The files rewritten (or, in check and diff modes, that would be)."""
        return [r for r in self.results if r.status is Status.CHANGED]

    @property
    def errors(self) -> list[FileResult]:
        """The files that could not be processed or written (``error``, ``line``, ``col``)."""
        return [r for r in self.results if r.status is Status.ERROR]

    @property
    def edits(self) -> list[tuple[str, EditRecord]]:
        """Every edit, with the path of its file."""
        return [(r.path, edit) for r in self.results for edit in r.edits]

    @property
    def notes(self) -> list[tuple[str, NoteRecord]]:
        """Every graph break a rule recognised but left alone, with the path of its file."""
        return [(r.path, note) for r in self.results for note in r.notes]

    def summary(self) -> dict[str, int]:
        """Files by outcome and the number of edits (the JSON report's ``summary``)."""
        from .running.report import summary

        return summary(list(self.results))

    def to_json(self, steps: dict[str, dict[str, Any]] | None = None) -> str:
        """The ``--format json`` document (``steps``: plugin steps' records)."""
        from .running.report import to_json

        return to_json(list(self.results), self.mode, steps)

    def to_sarif(self) -> str:
        """The ``--format sarif`` document: one result per edit, with its fix."""
        from .running.report import to_sarif

        return to_sarif(list(self.results), [r for pack in self.packs for r in pack.rules])


def rewrite(paths: PathArg | Iterable[PathArg], *, rules: Sequence[str] | None = None,
            mode: Mode | str = Mode.WRITE, out: PathArg | None = None,
            unsafe: bool | None = None, assume_tensor_params: bool | None = None,
            trust_scalar_annotations: bool | None = None, scope: Sequence[str] = (),
            ignore: Sequence[str] = (), exclude: Sequence[str] = (), black: bool = False,
            cache: bool = True, cache_dir: PathArg | None = None, jobs: int | None = None,
            config: Config | None = None, progress: bool = False) -> RewriteReport:
    """Rewrite the Python files under ``paths``, as ``eqrewrite PATH...`` does.

    ``mode``: ``"write"`` rewrites in place (``out`` given: writes the rewritten tree there
    instead, mode ``"out"``), ``"check"`` and ``"diff"`` write nothing (``diff``: each
    result's ``diff``). ``rules``: pack files or packaged names (default: the configured
    packs, else ``default``). ``None`` for a switch, and an empty ``scope``, take the
    project's ``[tool.eqrewrite]`` (``config``: that table already read, or ``Config()``
    for the defaults; default: read from the project root above ``paths``). ``scope`` and
    ``ignore`` as ``--scope`` and ``--ignore``; ``exclude``: gitignore-style globs added to
    the configured ones. ``cache``: read and write the per-file cache (in ``cache_dir``,
    default ``.eqrewrite_cache`` in the project). ``jobs``: worker processes (default:
    cores). ``progress``: bars on stderr.

    A file that cannot be processed is that file's ``error`` result; the others still are.
    A bad argument, configuration or pack raises one of ``USAGE_ERRORS`` before any file
    is read."""
    from .running.cache import Cache, canonical, default_cache_dir, prune
    from .running.formatting import require_black
    from .running.runner import Job, run
    from .workspace.worklist import plan

    roots = _paths(paths)
    out_root = Path(out) if out is not None else None
    chosen = _mode(mode, out_root)
    if black and (missing := require_black()) is not None:
        raise OptionError(missing)
    root = find_project_root(list(roots))
    config = load_config(root) if config is None else config
    packs = _load_packs(list(rules) if rules else config.rules)
    scopes, profiles = _parse_scopes(list(scope) or config.scope or [],
                                     root if not scope else Path.cwd())
    options = RewriteOptions(
        unsafe=config.unsafe if unsafe is None else unsafe,
        assume_tensor_params=(config.assume_tensor_params if assume_tensor_params is None
                              else assume_tensor_params),
        scope=scopes, profiles=profiles,
        trust_scalar_annotations=(config.trust_scalar_annotations
                                  if trust_scalar_annotations is None
                                  else trust_scalar_annotations),
    )
    job = Job(tuple(p.path for p in packs), options, chosen, out_root, black,
              _checked_ignores(tuple(ignore), config, packs))
    excludes = config.exclude + config.extend_exclude + list(exclude)
    files = list(discover_files(list(roots), config.include, excludes, root, skip=out_root))
    items = plan(files, list(roots), out_root)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir(root)
    job = _with_scopes(job, files, roots, config, excludes, root, jobs,
                       folder if cache else None)
    store = Cache(
        folder,
        # Each file's slice of job.scopes is part of its own entry (cache.scope_facts).
        [p.digest for p in packs] + [canonical(options), canonical(set(job.ignore))],
    ) if cache and not black else None
    results = run(items, job, store, jobs, progress=progress)
    if cache:
        prune(folder)  # after the run, which touched or wrote every cache file it used
    selected = select_rules([r for p in packs for r in p.rules if r.id not in job.ignore],
                            options)
    empty = tuple(p for p in roots if p.is_dir() and not any(p in f.parents for f in files))
    return RewriteReport(roots, root, chosen, out_root, tuple(packs), tuple(selected), options,
                         tuple(results), empty, job.scopes)


def _paths(paths: PathArg | Iterable[PathArg]) -> tuple[Path, ...]:
    """The paths given, as ``Path``s; none, or one that does not exist, is an OptionError."""
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not given:
        raise OptionError("no paths given")
    found = tuple(Path(p) for p in given)
    for path in found:
        if not path.exists():
            raise OptionError(f"{path}: no such file or folder")
    return found


def _mode(mode: Mode | str, out: Path | None) -> Mode:
    try:
        chosen = Mode(mode)
    except ValueError:
        raise OptionError(f"unknown mode {mode!r}; choose from "
                          f"{', '.join(m.value for m in Mode)}") from None
    if out is not None:
        if chosen.reports_only:
            raise OptionError("--out writes a rewritten tree; it cannot be combined with "
                              "--check or --diff")
        return Mode.OUT
    if chosen is Mode.OUT:
        raise OptionError("mode 'out' needs the folder to write: out=...")
    return chosen


def _load_packs(specs: list[str]) -> list[RulePack]:
    """The packs; one that cannot be read is a RuleError naming it."""
    try:
        return [load_pack(spec) for spec in specs]
    except OSError as error:
        raise RuleError(str(error.filename), 0, 0,
                        f"cannot read the rule pack: {error.strerror or error}") from None


def _checked_ignores(ignored: tuple[str, ...], config: Config,
                     packs: list[RulePack]) -> tuple[str, ...]:
    """The rule ids to ignore; one that no pack defines is an OptionError (likely a typo)."""
    known = {rule.id for pack in packs for rule in pack.rules}
    for rule_id in ignored:
        if rule_id not in known:
            raise OptionError(f"--ignore: no rule {rule_id!r} in the selected packs"
                              f"{_did_you_mean(rule_id, known)}")
    if any(rule_id not in known for rule_id in config.ignore):
        # The project may ignore rules of its configured packs while --rules picks others.
        known |= {rule.id for pack in _load_packs(config.rules) for rule in pack.rules}
    for rule_id in config.ignore:
        if rule_id not in known:
            raise OptionError(f"{config.path}: [tool.eqrewrite] ignore: no rule {rule_id!r}"
                              f"{_did_you_mean(rule_id, known)}")
    return tuple(ignored) + tuple(config.ignore)


def _did_you_mean(name: str, known: set[str]) -> str:
    matches = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean {', '.join(matches)}?)" if matches else ""


def _parse_scopes(values: list[str], base: Path) -> tuple[frozenset[Scope] | None,
                                                       tuple[str, ...]]:
    """``--scope`` values as rule scopes plus profile files (``traced:FILE``, relative to
    ``base``)."""
    scopes: set[Scope] = set()
    profiles = []
    for value in values:
        if value.startswith("traced:"):
            profile = base / value.split(":", 1)[1]
            if not profile.is_file():
                raise OptionError(f"--scope {value}: no such file {str(profile)!r}")
            scopes.add(Scope.PROFILED)
            profiles.append(str(profile.resolve()))
        elif value in known_scopes():
            scopes.add(Scope(value))
        else:
            raise OptionError(f"unknown scope {value!r}; choose from "
                              f"{', '.join(sorted(known_scopes()))} or traced:FILE")
    return frozenset(scopes) or None, tuple(profiles)


def _with_scopes(job: Job, files: list[Path], paths: tuple[Path, ...], config: Config,
                 excludes: list[str], root: Path, jobs: int | None,
                 cache_folder: Path | None) -> Job:
    """``job`` with its function scopes: the call graph for ``traced`` covers the packages
    holding the files too, its summaries kept in ``cache_folder`` (None: no cache)."""
    from .running.runner import needed_scopes, prepare_scopes
    from .running.summaries import SummaryStore
    from .workspace.discovery import package_files

    context = package_files(files, list(paths), config.include, excludes, root) if (
        Scope.TRACED in needed_scopes(job)) else []
    store = None if cache_folder is None else SummaryStore(cache_folder)
    return prepare_scopes(job, files, jobs, context, store)


@dataclass(frozen=True)
class AuditReport:
    """What ``audit`` found: ``document`` is the report every format renders (``render``),
    the JSON that ``eqrewrite audit --format json`` prints (described by the package's
    ``audit/schema.json``); the properties read its main parts."""

    paths: tuple[Path, ...]
    root: Path                  # the project root: finding files are relative to it
    files: tuple[Path, ...]     # the Python files audited
    packs: tuple[str, ...]      # the rule packs (paths) that resolved the findings
    options: RewriteOptions     # scope and assumptions, as the packs ran
    document: dict[str, Any]
    configured_baseline: Path | None = None  # [tool.eqrewrite.audit] baseline, if any
    # torch._dynamo.config switches the dynamic audit (--run) also measures with
    dynamo_config: dict[str, object] = field(default_factory=dict)

    @property
    def findings(self) -> list[dict[str, Any]]:
        """One record per break site: ``id``, ``pattern``, ``file``, ``line``, ``function``,
        ``code``, ``fix`` (``rule``, ``setting`` or ``manual``), ``rule``, ``after``, ..."""
        found: list[dict[str, Any]] = self.document["findings"]
        return found

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The files that could not be audited (``file``, ``line``, ``message``)."""
        errors: list[dict[str, Any]] = self.document["errors"]
        return errors

    @property
    def summary(self) -> dict[str, Any]:
        """Totals: files, findings, by fix and their shares, causes most frequent first."""
        summary: dict[str, Any] = self.document["summary"]
        return summary

    def compare_to(self, baseline: PathArg) -> None:
        """Keep only the findings a previous JSON report (``baseline``) does not have, as
        ``--baseline`` does; the document's ``baseline`` says what is known and fixed.
        Raises BaselineError for a file that is not such a report."""
        from .audit.document import apply_baseline, load_baseline

        path = Path(baseline)
        apply_baseline(self.document, load_baseline(path), _label(path, self.root))

    def render(self, output_format: str = "text", color: bool = False) -> str:
        """The report as ``text``, ``md``, ``json``, ``sarif`` or ``html``."""
        from .audit.formats import FORMATS, render

        if output_format not in FORMATS:
            raise OptionError(f"unknown audit format {output_format!r}; choose from "
                              f"{', '.join(FORMATS)}")
        return render(self.document, output_format, self.root, color=color)


def audit(paths: PathArg | Iterable[PathArg], *, rules: Sequence[str] | None = None,
          scope: Sequence[str] = (), assume_tensor_params: bool | None = None,
          trust_scalar_annotations: bool | None = None, ignore: Sequence[str] = (),
          exclude: Sequence[str] = (), baseline: PathArg | None = None,
          jobs: int | None = None, cache: bool = True, cache_dir: PathArg | None = None,
          config: Config | None = None,
          dynamo_config: Mapping[str, object] | None = None) -> AuditReport:
    """Audit the Python files under ``paths`` for graph breaks, as ``eqrewrite audit``
    does (statically: nothing is imported or run).

    ``rules``: the packs whose rules may fix the findings (default: the configured ones,
    else ``graphbreaks``); ``scope``: where to look (``everywhere``, ``forward``,
    ``compiled``, ``traced``; default: the configured scope, else forward and compiled);
    ``ignore``: pattern ids not to report; ``baseline``: a previous JSON report, whose
    findings are then left out (``AuditReport.compare_to``; the configured baseline is
    ``configured_baseline``, not applied unless given). The other arguments as for
    ``rewrite``. ``dynamo_config``: ``torch._dynamo.config`` switches (``DYNAMIC_SIZES``,
    ``{"KEY": value}``, or ``parse_switches(["KEY=VALUE"], dynamic_sizes)``) that the dynamic
    audit run on the report (``eqrewrite audit --run``: the oracle's, which checks them
    against Dynamo) measures every target with besides the defaults; the report keeps them
    (``AuditReport.dynamo_config``, ``settings.dynamo_config``). A file that cannot be
    audited is one of the report's ``errors``; a bad argument, configuration or pack raises
    one of ``USAGE_ERRORS``."""
    from .audit.config import audit_config, check_patterns, check_scopes
    from .running.cache import default_cache_dir, prune

    roots = _paths(paths)
    root = find_project_root(list(roots))
    config = load_config(root) if config is None else config
    settings = audit_config(config)
    try:
        check_scopes(list(scope), "--scope")
        check_patterns(list(ignore), "--ignore")
        switches = DynamoSwitches(dynamo_config or {})
    except (ConfigError, SwitchError) as error:
        raise OptionError(str(error)) from None
    packs = tuple(str(pack.path) for pack in _load_packs(list(rules) if rules
                                                          else settings.rules))
    started = time.perf_counter()
    folder = None if not cache else Path(cache_dir) if cache_dir is not None else (
        default_cache_dir(root))
    report = _audit_files(roots, root, config, settings, packs, tuple(scope),
                          (assume_tensor_params, trust_scalar_annotations), tuple(ignore),
                          tuple(exclude), (jobs, folder))
    if folder is not None:
        prune(folder)  # after the audit, which touched or wrote every cache file it used
    if switches.values:
        report.document["settings"]["dynamo_config"] = switches.to_json()["switches"]
        report = replace(report, dynamo_config=switches.values)
    report.document["summary"]["seconds"] = round(time.perf_counter() - started, 3)
    if baseline is not None:
        report.compare_to(baseline)
    return report


def _audit_files(paths: tuple[Path, ...], root: Path, config: Config, audit: AuditConfig,
                 packs: tuple[str, ...], scopes: tuple[str, ...],
                 switches: tuple[bool | None, bool | None], ignored: tuple[str, ...],
                 excludes: tuple[str, ...], running: tuple[int | None, Path | None]
                 ) -> AuditReport:
    """Discover the files and audit them. ``switches``: assume_tensor_params and
    trust_scalar_annotations (None: the configuration's); ``running``: the worker count
    and the cache folder (None: no cache)."""
    from .audit.document import build
    from .audit.scan import ScanOptions, audit_files
    from .workspace.discovery import package_files

    scope = frozenset(scopes or audit.scope)
    assume, trust = switches
    if trust is None:
        trust = config.trust_scalar_annotations
    if assume is None:
        assume = (audit.assume_tensor_params if audit.assume_tensor_params is not None
                  else config.assume_tensor_params)
    chosen = frozenset(Scope(s) for s in scopes) or (
        frozenset(Scope(s) for s in scope) if "scope" in audit.given else None)
    options = RewriteOptions(assume_tensor_params=assume, scope=chosen,
                             trust_scalar_annotations=trust)
    scan = ScanOptions(packs, scope, options.scope, assume,
                       frozenset(ignored) | frozenset(audit.ignore),
                       trust_scalar_annotations=trust)
    exclude = config.exclude + config.extend_exclude + audit.exclude + list(excludes)
    files = list(discover_files(list(paths), config.include, exclude, root))
    labelled = [(f, _label(f, root)) for f in files]
    # The traced scope follows calls through the whole packages holding the files.
    context = package_files(files, list(paths), config.include, exclude, root) if (
        "traced" in scope) else []
    started = time.perf_counter()
    audits = audit_files(labelled, scan, *running, context)
    settings = {"paths": [_label(p, root) for p in paths], "scope": sorted(scope),
                "rules": [Path(p).name for p in packs], "assume_tensor_params": assume,
                "trust_scalar_annotations": trust, "ignore": sorted(scan.ignore)}
    document = build(audits, settings, time.perf_counter() - started)
    return AuditReport(paths, root, tuple(files), packs, options, document, audit.baseline)


def _label(path: Path, root: Path) -> str:
    """``path`` relative to the project root, with '/' (ids and baselines depend on it)."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


# -- a rewrite's rounds, replayed without some edits ------------------------------------------

Lines = tuple[int, int]  # first and last line, 1-based


@dataclass(frozen=True)
class RoundEdit:
    """One edit a rewrite made: ``index`` among those of round ``round`` (whose text its
    ``edit.span`` counts in), and the ``lines`` of the original text it stems from."""

    round: int
    index: int
    edit: Edit
    lines: Lines


class Rounds:
    """A rewrite of one text, round by round, as the engine makes it (``rewrite_rounds``).

    ``without(excluded)`` replays it: each round the engine's matcher runs on the replayed
    text, and an edit it finds is applied only if it is one the rewrite made (the same rule
    at the same place, found through the lines the two texts share) and not excluded. So an
    excluded edit stays out in every later round, and a later edit that rewrote its output
    goes with it.
    """

    def __init__(self, text: str, rules: list[Rule], options: RewriteOptions):
        self.rules, self.options = rules, options
        rewrite = rewrite_text(text, rules, options)
        self.texts = [text]  # the text each round read, then the result
        self.by_round: list[list[Edit]] = []
        for number in range(1, MAX_ROUNDS + 1):
            edits = [edit for n, edit in rewrite.edits if n == number]
            if not edits:
                break
            self.by_round.append(edits)
            self.texts.append(apply_edit_subset(self.texts[-1], edits))
        if self.texts[-1] != rewrite.text:
            raise RewriteError("replaying the rewrite's rounds gave another text")
        # How each round's output lines follow from its input lines (diffed once per round).
        self._changes = [SequenceMatcher(None, split_lines(old), split_lines(new),
                                         autojunk=False).get_opcodes()
                         for old, new in zip(self.texts, self.texts[1:])]
        self.edits = [RoundEdit(number, index, edit, self._origin(number, edit.span))
                      for number, edits in enumerate(self.by_round, 1)
                      for index, edit in enumerate(edits)]

    def without(self, excluded: Collection[tuple[int, int]]) -> str:
        """The rewrite's text with the edits ``(round, index)`` in ``excluded`` left out."""
        current = self.texts[0]
        for number, made in enumerate(self.by_round, 1):
            tree = parse(current)
            found = find_edits(current, tree, self.rules, self.options.assume_tensor_params,
                               self.options.trust_scalar_annotations,
                               self.options.function_scopes)
            place = _Placer(current, self.texts[number - 1])
            wanted: dict[tuple[str, Span | None], int] = {
                (edit.rule.id, edit.span): index for index, edit in enumerate(made)}
            kept = with_requirements([
                edit for edit in found
                if (index := wanted.get((edit.rule.id, place(edit.span)))) is not None
                and (number, index) not in excluded])
            current = apply_edit_subset(current, kept, tree)
        parse(current)  # a replay that does not parse is refused, as the rewrite would be
        return current

    def _origin(self, number: int, span: Span) -> Lines:
        """The lines of the original text that ``span`` (in round ``number``'s text) stems
        from: through each earlier round, a line it rewrote stands for the lines it replaced."""
        first, last = span[0], span[2]
        for codes in reversed(self._changes[:number - 1]):
            first, last = _back(codes, first)[0], _back(codes, last)[1]
        return first, last


class _Placer:
    """Spans of one text -> the same spans in another version of it: lines the two share
    are found by diffing lines, and characters within lines that differ (an edit elsewhere
    on the line) by diffing the two lines. A span is placed only where the other text holds
    exactly the same characters."""

    def __init__(self, text: str, other: str):
        self.lines, self.other = split_lines(text), split_lines(other)
        self.pairs: dict[int, int] = {}  # 0-based line here -> line there
        if text == other:
            self.pairs = {i: i for i in range(len(self.lines))}
            return
        matcher = SequenceMatcher(None, self.lines, self.other, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                self.pairs.update(zip(range(i1, i2), range(j1, j2)))

    def __call__(self, span: Span) -> Span | None:
        start = self._point(span[0], span[1])
        end = self._point(span[2], span[3] - 1) if span[3] > 0 else None
        if start is None or end is None:
            return None
        placed = (start[0], start[1], end[0], end[1] + 1)
        return placed if _text(self.other, placed) == _text(self.lines, span) else None

    def _point(self, line: int, col: int) -> tuple[int, int] | None:
        there = self.pairs.get(line - 1)
        if there is None:
            return None
        here_text, there_text = self.lines[line - 1], self.other[there]
        if here_text == there_text:
            return there + 1, col
        blocks = SequenceMatcher(None, here_text, there_text, autojunk=False)
        for block in blocks.get_matching_blocks():
            if block.a <= col < block.a + block.size:
                return there + 1, block.b + col - block.a
        return None


def _text(lines: list[str], span: Span) -> str | None:
    """The characters ``span`` covers in ``lines`` (None past the end)."""
    first, col, last, end_col = span
    if not 1 <= first <= last <= len(lines):
        return None
    if first == last:
        return lines[first - 1][col:end_col]
    return (lines[first - 1][col:] + "".join(lines[first:last - 1])
            + lines[last - 1][:end_col])


def _back(codes: Sequence[tuple[str, int, int, int, int]], line: int) -> Lines:
    """The lines of a round's input that line ``line`` of its output stands for."""
    for tag, i1, i2, j1, j2 in codes:
        if j1 < line <= j2:
            if tag == "equal":
                return i1 + line - j1, i1 + line - j1
            return i1 + 1, max(i1 + 1, i2)  # rewritten (or inserted) lines
    return line, line

