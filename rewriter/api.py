"""The rewriter's public API: what the oracle, the tests, the benchmarks and other tools use.

Everything outside ``eqrewrite.rewriter`` imports rewriter names from here only, so the
modules behind it can change shape without breaking their users (a test checks the import
graph). Nothing here imports torch or the oracle (the oracle's own function, ``oracle``, is
``eqrewrite.oracle.api``'s).

- the commands as functions (docs/api.md), the command line being a thin layer over them:
  ``rewrite`` (``eqrewrite PATH``) takes a ``RewriteSettings`` (or its fields as keywords,
  ``RewriteKeywords``) and returns a ``RewriteReport``, and ``audit``
  (``eqrewrite audit PATH``) returns an ``AuditReport``, the typed results the commands
  print; a bad argument, configuration or pack raises ``OptionError``, ``ConfigError``,
  ``RuleError``, ``PlanError`` or ``BaselineError`` (``USAGE_ERRORS``: what the commands
  exit 2 on);
- rule packs: ``load_pack``, ``load_packs``, ``packaged_packs``, ``select_rules``;
- one source text: ``rewrite_text`` returns a ``Rewrite`` (new text and ``Edit``s by round);
  ``rewrite_rounds`` keeps its rounds to replay it without some edits (``Rounds.without``,
  ``rounds.py``);
- a run's results, as the command line's plugin steps see them (``RewriteRun``):
  ``FileResult`` (``Status``), its ``EditRecord``s and ``NoteRecord``s, the run's ``Mode``;
- files: ``discover_files``, ``decode``/``encode``/``write_atomic``, and
  ``write_checked`` (refuses read-only files, as a rewrite in place does; ``WriteError``);
- configuration: ``find_project_root``, ``load_config`` (a ``Config``; the tables it leaves
  to others, such as ``[tool.eqrewrite.oracle]``, as TOML holds them: ``TomlTable``);
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
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from .analysis.facts import ModuleFacts
from .analysis.facts.definitions import definition_qualname
from .analysis.facts.scopes import FUNCTION_SCOPES
from .arguments import OptionError, PathArg, did_you_mean, given_paths, parse_scopes, read_packs
from .audit.catalogue import WHAT_IF as WHAT_IF_SWITCHES
from .audit.document import BaselineError
from .hook import HookError, ImportHook, install_import_hook, run_with_import_hook
from .matching.matcher import Edit
from .matching.rules import Rule, RuleError, RulePack, load_pack, packaged_packs, resolve_pack
from .rewriting.engine import Rewrite, RewriteError, RewriteOptions, parse, select_rules
from .rewriting.engine import rewrite_source as rewrite_text
from .rounds import RoundEdit, Rounds, apply_edit_subset, rewrite_rounds
from .running.results import EditRecord, FileResult, Mode, NoteRecord, Status
from .running.summaries import function_scopes, traced_functions
from .switches import DYNAMIC_SIZES, DynamoSwitches, SwitchError, parse_switches
from .syntax.enums import Scope
from .workspace.config import Config, ConfigError, TomlTable, find_project_root, load_config
from .workspace.discovery import discover as discover_files
from .workspace.files import WriteError, write_atomic, write_checked
from .workspace.sources import Source, SourceError, decode, encode
from .workspace.worklist import PlanError

if TYPE_CHECKING:
    from typing import Unpack

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
    "BaselineError", "USAGE_ERRORS", "RewriteSettings", "RewriteKeywords", "PathArg",
    "TomlTable",
]


# What the commands report as usage errors (exit 2): the API raises nothing else for a bad
# argument, configuration, rule pack, --out folder or baseline.
USAGE_ERRORS: tuple[type[Exception], ...] = (OptionError, ConfigError, RuleError, PlanError,
                                              BaselineError)


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


class RewriteKeywords(TypedDict, total=False):
    """``rewrite``'s keywords: the fields of ``RewriteSettings``, each in the spellings it
    accepts (a list or tuple of texts, a ``str`` or ``Path`` for a folder, a ``Mode`` or its
    value)."""

    rules: Sequence[str] | None
    mode: Mode | str
    out: PathArg | None
    unsafe: bool | None
    assume_tensor_params: bool | None
    trust_scalar_annotations: bool | None
    scope: Sequence[str]
    ignore: Sequence[str]
    exclude: Sequence[str]
    black: bool
    cache: bool
    cache_dir: PathArg | None
    jobs: int | None
    config: Config | None
    progress: bool


def _texts(value: Iterable[str] | str | None) -> tuple[str, ...]:
    """A sequence of texts as a tuple (one text alone is one item, not its characters)."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class RewriteSettings:
    """Everything ``eqrewrite PATH...`` takes besides the paths (docs/api.md), as one
    frozen value: what ``api.rewrite`` is given and hands on whole.

    ``rules``: pack files or packaged names (empty: the configured packs, else
    ``default``). ``mode``: ``write`` rewrites in place (with ``out``: writes the rewritten
    tree there instead, mode ``out``), ``check`` and ``diff`` write nothing. A switch left
    ``None``, and an empty ``scope``, take the project's ``[tool.eqrewrite]`` (``config``:
    that table already read, or ``Config()`` for the defaults; ``None``: read from the
    project root above the paths). ``scope`` and ``ignore`` as ``--scope`` and ``--ignore``;
    ``exclude``: gitignore-style globs added to the configured ones. ``black``: format
    changed files; ``cache``: read and write the per-file cache (in ``cache_dir``, default
    ``.eqrewrite_cache`` in the project); ``jobs``: worker processes (default: cores);
    ``progress``: bars on stderr.

    Built from other spellings too (a list for a tuple, a text for a ``Path`` or a
    ``Mode``); an unknown mode is an ``OptionError`` here already."""

    rules: tuple[str, ...] = ()
    mode: Mode = Mode.WRITE
    out: Path | None = None
    unsafe: bool | None = None
    assume_tensor_params: bool | None = None
    trust_scalar_annotations: bool | None = None
    scope: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    black: bool = False
    cache: bool = True
    cache_dir: Path | None = None
    jobs: int | None = None
    config: Config | None = field(default=None, hash=False)  # a Config is not hashable
    progress: bool = False

    def __post_init__(self) -> None:
        for name in ("rules", "scope", "ignore", "exclude"):
            object.__setattr__(self, name, _texts(getattr(self, name)))
        for name in ("out", "cache_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            raise OptionError(f"unknown mode {self.mode!r}; choose from "
                              f"{', '.join(m.value for m in Mode)}") from None

    def replaced(self, **keywords: Unpack[RewriteKeywords]) -> RewriteSettings:
        """These settings with some fields given other values (``rewrite``'s keywords); an
        unknown name is a TypeError, as for any function."""
        known = {f.name for f in fields(self)}
        for name in keywords:
            if name not in known:
                raise TypeError(f"rewrite() got an unexpected keyword argument {name!r}")
        changes: dict[str, Any] = dict(keywords)
        return replace(self, **changes) if changes else self

    def run_mode(self) -> Mode:
        """What the run may write: ``out`` given makes it an ``out`` run, which a
        report-only mode refuses."""
        if self.out is not None:
            if self.mode.reports_only:
                raise OptionError("--out writes a rewritten tree; it cannot be combined with "
                                  "--check or --diff")
            return Mode.OUT
        if self.mode is Mode.OUT:
            raise OptionError("mode 'out' needs the folder to write: out=...")
        return self.mode

    def engine_options(self, config: Config, root: Path) -> RewriteOptions:
        """The options the rules run under: these settings over the project's ``config``
        (``root``: where the configured ``traced:FILE`` scopes are relative to)."""
        scopes, profiles = parse_scopes(list(self.scope) or config.scope or [],
                                        root if not self.scope else Path.cwd())
        return RewriteOptions(
            unsafe=config.unsafe if self.unsafe is None else self.unsafe,
            assume_tensor_params=(config.assume_tensor_params
                                  if self.assume_tensor_params is None
                                  else self.assume_tensor_params),
            scope=scopes, profiles=profiles,
            trust_scalar_annotations=(config.trust_scalar_annotations
                                      if self.trust_scalar_annotations is None
                                      else self.trust_scalar_annotations),
        )


def _checked_ignores(ignored: tuple[str, ...], config: Config,
                    packs: list[RulePack]) -> tuple[str, ...]:
    """The rule ids to ignore; one that no pack defines is an OptionError (likely a typo)."""
    known = {rule.id for pack in packs for rule in pack.rules}
    for rule_id in ignored:
        if rule_id not in known:
            raise OptionError(f"--ignore: no rule {rule_id!r} in the selected packs"
                              f"{did_you_mean(rule_id, known)}")
    if any(rule_id not in known for rule_id in config.ignore):
        # The project may ignore rules of its configured packs while --rules picks others.
        known |= {rule.id for pack in read_packs(config.rules) for rule in pack.rules}
    for rule_id in config.ignore:
        if rule_id not in known:
            raise OptionError(f"{config.path}: [tool.eqrewrite] ignore: no rule {rule_id!r}"
                              f"{did_you_mean(rule_id, known)}")
    return tuple(ignored) + tuple(config.ignore)




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
    settings: RewriteSettings = field(default_factory=RewriteSettings)  # what was asked

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
    def status(self) -> int:
        """The command's exit status (before its plugin steps): 123 if some file could not
        be processed or written, 1 if ``check`` or ``diff`` found changes, else 0."""
        if self.errors:
            return 123
        return 1 if self.mode.reports_only and self.changed else 0

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


def rewrite(paths: PathArg | Iterable[PathArg], settings: RewriteSettings | None = None,
            **keywords: Unpack[RewriteKeywords]) -> RewriteReport:
    """Rewrite the Python files under ``paths``, as ``eqrewrite PATH...`` does.

    ``settings``: what the command takes besides the paths (``RewriteSettings``: the rule
    packs, the mode, ``out``, the switches, the cache...); ``keywords``: any of its fields
    (``rewrite("src", mode="check")``), over ``settings`` when both are given; an unknown
    one is a TypeError. A switch left ``None``, and an empty ``scope``, take the project's
    ``[tool.eqrewrite]``.

    A file that cannot be processed is that file's ``error`` result; the others still are.
    A bad argument, configuration or pack raises one of ``USAGE_ERRORS`` before any file
    is read."""
    from .running.cache import Cache, canonical, default_cache_dir, prune
    from .running.formatting import require_black
    from .running.runner import Job, run
    from .workspace.worklist import plan

    roots = given_paths(paths)
    chosen = (settings or RewriteSettings()).replaced(**keywords)
    mode = chosen.run_mode()
    if chosen.black and (missing := require_black()) is not None:
        raise OptionError(missing)
    root = find_project_root(list(roots))
    config = load_config(root) if chosen.config is None else chosen.config
    packs = read_packs(list(chosen.rules) or config.rules)
    options = chosen.engine_options(config, root)
    job = Job(tuple(p.path for p in packs), options, mode, chosen.out, chosen.black,
              _checked_ignores(chosen.ignore, config, packs))
    excludes = config.exclude + config.extend_exclude + list(chosen.exclude)
    files = list(discover_files(list(roots), config.include, excludes, root, skip=chosen.out))
    items = plan(files, list(roots), chosen.out)
    folder = chosen.cache_dir if chosen.cache_dir is not None else default_cache_dir(root)
    job = _with_scopes(job, files, roots, config, excludes, root, chosen.jobs,
                       folder if chosen.cache else None)
    store = Cache(
        folder,
        # Each file's slice of job.scopes is part of its own entry (cache.scope_facts).
        [p.digest for p in packs] + [canonical(options), canonical(set(job.ignore))],
    ) if chosen.cache and not chosen.black else None
    results = run(items, job, store, chosen.jobs, progress=chosen.progress)
    if chosen.cache:
        prune(folder)  # after the run, which touched or wrote every cache file it used
    selected = select_rules([r for p in packs for r in p.rules if r.id not in job.ignore],
                            options)
    empty = tuple(p for p in roots if p.is_dir() and not any(p in f.parents for f in files))
    return RewriteReport(roots, root, mode, chosen.out, tuple(packs), tuple(selected), options,
                         tuple(results), empty, job.scopes, chosen)


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

    @property
    def status(self) -> int:
        """The command's exit status (without ``--exit-zero`` and the dynamic audit's): 123
        if some file could not be audited, 1 if there are findings, else 0."""
        return 123 if self.errors else 1 if self.findings else 0

    def add_dynamic(self, record: Mapping[str, Any]) -> None:
        """The dynamic audit's record (``eqrewrite audit --run``: the oracle's) as the
        report's ``dynamic`` section, each break it observed joined to the finding at its
        line."""
        from .audit.document import join_dynamic

        self.document["dynamic"] = dict(record)
        join_dynamic(self.document)

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

    roots = given_paths(paths)
    root = find_project_root(list(roots))
    config = load_config(root) if config is None else config
    settings = audit_config(config)
    try:
        check_scopes(list(scope), "--scope")
        check_patterns(list(ignore), "--ignore")
        switches = DynamoSwitches(dynamo_config or {})
    except (ConfigError, SwitchError) as error:
        raise OptionError(str(error)) from None
    packs = tuple(str(pack.path) for pack in read_packs(list(rules) if rules
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

