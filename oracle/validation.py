"""Validating trees with the oracle: what ``oracle()`` (``eqrewrite oracle``) and the
rewrite command's ``--oracle`` step (``validated_rewrite()``, ``eqrewrite PATH --oracle
[--rollback]``) share.

The compile settings and ``[tool.eqrewrite.oracle]`` checked (``configured``,
``check_switches``: every usage problem an ``OracleError`` before any worker starts), every
target of a tree validated (``validate_trees``: an ``OracleReport``), the edits that changed
a target's behaviour found and reverted (``make_rollback``), and a rewrite's written tree
validated against its source (``validate_rewritten``). Nothing is printed. ``api.py``
exposes these names (the oracle's packages and the command line import them from there);
importing this module stays cheap: torch and the harness load when a validation runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypedDict, cast

from .harness.targets import discover_targets, factory_targets
from .judging.settings import KNOWN_KEYS, CompileSettings, TargetError, parse_settings

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.api import EditRecord, FileResult, RewriteOptions, Rule, TomlTable

    from .formats import OracleDocument
    from .harness.harness import Harness, Revalidate, TargetReport
    from .judging.settings import Target

__all__ = ["DEFAULT_PARALLEL", "Changed", "OracleError", "OracleOptions", "OracleReport",
           "RunKeys", "changed_files", "check_rewrite_paths", "check_switches",
           "compile_settings", "configured", "make_rollback", "validate_rewritten",
           "validate_trees"]

# What ``validate_trees`` is given for each rewritten file: its edit records, or None if unknown.
Changed = dict[str, "tuple[EditRecord, ...] | None"]

# Two targets in flight keep two cores busy; each costs a worker process (torch imported).
DEFAULT_PARALLEL = min(2, os.cpu_count() or 1)
# Keys of [tool.eqrewrite.oracle] beyond the compile settings.
_RUN_KEYS = ("factory", "timeout", "memory-limit", "reproducers")
# The run keys of [tool.eqrewrite.oracle], as ``configured`` checks them (``factory`` is
# checked where it is read, ``running.targets.factory_targets``). Functional form: the
# keys are spelled as in pyproject.toml.
RunKeys = TypedDict("RunKeys", {"factory": object, "timeout": float, "memory-limit": float,
                                "reproducers": str}, total=False)


class OracleError(Exception):
    """A usage problem found before any worker starts (exit 2 on the command line, which
    reports it as a usage error with this message): what every function of ``api.py``
    raises for a bad argument (``api.OracleError``)."""


@dataclass
class OracleOptions:
    """How to validate: compile ``settings`` (the keys of ``[tool.eqrewrite.oracle]``:
    ``backend``, ``mode``, ``dynamic``, ``fullgraph``, ``inductor.<switch>``,
    ``dynamo.<switch>``, ``strict``...; they win over a target's header and the project's
    configuration), limits, comparison, reproducers. ``output_format``, ``output`` and
    ``show_output`` are the command line's: how it prints the report."""

    settings: dict[str, object] = field(default_factory=dict)
    timeout: float = 300.0
    memory_gb: float = 16.0
    strict: bool = False
    tolerance_scale: float = 1.0
    reproducers: Path | None = None
    count_breaks: bool = True
    separate_break_count: bool = False
    parallel: int = DEFAULT_PARALLEL
    output_format: str = "text"
    output: Path | None = None
    show_output: bool = False


def compile_settings(backend: str | None = None, mode: str | None = None,
                     dynamic: bool | None = None, fullgraph: bool | None = None,
                     inductor: Iterable[str] = (), dynamo: Iterable[str] = ()
                     ) -> dict[str, object]:
    """The compile settings of ``--backend``, ``--mode``, ``--dynamic``, ``--fullgraph``
    and the ``KEY=VALUE`` switches of ``--inductor-config``/``--dynamo-config``."""
    settings: dict[str, object] = {}
    for key, value in (("backend", backend), ("mode", mode), ("dynamic", dynamic),
                       ("fullgraph", fullgraph)):
        if value is not None:
            settings[key] = value
    try:
        settings.update({f"inductor.{k}": v for k, v in parse_settings(list(inductor)).items()})
        settings.update({f"dynamo.{k}": v for k, v in parse_settings(list(dynamo)).items()})
    except TargetError as error:
        raise OracleError(str(error)) from None
    return settings


@dataclass(frozen=True)
class OracleReport:
    """What the oracle found: one ``TargetReport`` per target (its ``verdict``, ``detail``,
    ``findings``, ``breaks`` per tree, ``seconds``...), the rewritten files or edits no
    target executed (``unvalidated``), the files that declare no target and why
    (``problems``), and the compile settings in force."""

    root: Path
    rewritten: Path | None
    targets: tuple[TargetReport, ...]
    unvalidated: tuple[str, ...]
    problems: tuple[str, ...]
    settings: CompileSettings
    start_seconds: float = 0.0  # starting the workers

    @property
    def failed(self) -> list[TargetReport]:
        """The targets whose verdict fails the run (a changed behaviour, a compiler bug...)."""
        from .judging.judge import FAILING

        return [r for r in self.targets if r.verdict in FAILING]

    @property
    def status(self) -> int:
        """The command's exit status: 1 if some target failed, else 0."""
        return 1 if self.failed else 0

    def to_json(self) -> OracleDocument:
        """The ``--format json`` document (JSON-ready)."""
        from .harness import report

        return report.document(list(self.targets), list(self.unvalidated),
                               list(self.problems), self.settings, self.start_seconds)

    def table(self, show_output: bool = False) -> str:
        """The text report, most severe first (``show_output``: what targets printed)."""
        from .harness import report

        return report.table(list(self.targets), list(self.unvalidated), list(self.problems),
                            self.settings, show_output=show_output)


def configured(config: TomlTable) -> tuple[dict[str, object], RunKeys]:
    """``[tool.eqrewrite.oracle]`` (as the rewriter's ``Config.oracle`` holds it) split into
    compile settings and run keys, validated: ``inductor``/``dynamo`` sub-tables become
    ``inductor.<key>``/``dynamo.<key>``."""
    settings: dict[str, object] = {}
    run: TomlTable = {}
    for key, value in config.items():
        if key in ("inductor", "dynamo") and isinstance(value, dict):
            settings.update({f"{key}.{k}": v for k, v in value.items()})
        elif key in _RUN_KEYS:
            run[key] = value
        elif key in KNOWN_KEYS or key.startswith(("inductor.", "dynamo.")):
            settings[key] = value
        else:
            raise OracleError(
                f"[tool.eqrewrite.oracle]: unknown key {key!r} (known: "
                f"{', '.join(KNOWN_KEYS + _RUN_KEYS)}, inductor.<option>, dynamo.<option>, "
                "or [tool.eqrewrite.oracle.inductor] / [tool.eqrewrite.oracle.dynamo] tables)")
    try:
        CompileSettings().merged(settings)
    except TargetError as error:
        raise OracleError(f"[tool.eqrewrite.oracle]: {error}") from None
    _check_run_keys(run)
    return settings, cast(RunKeys, run)


def _check_run_keys(run: TomlTable) -> None:
    """Numbers where numbers are meant, text where paths and names are."""
    for key in ("timeout", "memory-limit"):
        value = run.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or value <= 0):
            raise OracleError(f"[tool.eqrewrite.oracle]: {key} must be a positive number, "
                              f"got {value!r}")
    if "reproducers" in run and not isinstance(run["reproducers"], str):
        raise OracleError("[tool.eqrewrite.oracle]: reproducers must be a folder path, "
                          f"got {run['reproducers']!r}")


def check_switches(settings: CompileSettings, root: Path) -> None:
    """Refuse unknown backends and config switches before any worker starts (a
    ``module:function`` backend is imported the way workers import it: tree first)."""
    import difflib

    import torch._dynamo
    import torch._dynamo.config
    import torch._inductor.config

    backend = settings.backend
    if ":" in backend:
        import importlib.util

        # Found, not imported: the parent never runs user code (workers import it).
        module_name = backend.partition(":")[0]
        sys.path.insert(0, str(root.resolve()))
        try:
            found = importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        finally:
            sys.path.remove(str(root.resolve()))
        if not found:
            raise OracleError(f"--backend {backend}: no module {module_name!r} "
                              f"(looked in {root} and on sys.path)")
    elif backend not in torch._dynamo.list_backends(exclude_tags=()):
        known = torch._dynamo.list_backends(exclude_tags=())
        raise OracleError(f"unknown backend {backend!r} (known: {', '.join(known)}, or "
                          "module:function)")
    for prefix, table, module in (("inductor", settings.inductor_config, torch._inductor.config),
                                  ("dynamo", settings.dynamo_config, torch._dynamo.config)):
        names = list(module._config)
        for key, _ in table:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise OracleError(f"unknown {prefix} config switch {key!r}{hint}")


def validate_trees(root: Path, rewritten: Path | None, files: list[Path], changed: Changed,
                   options: OracleOptions, config: TomlTable,
                   rollback: Revalidate | None = None, explicit: Path | None = None,
                   progress: bool = False) -> OracleReport:
    """Validate every target of ``files`` (under ``root``) and the configured factories;
    nothing is printed.

    ``changed`` maps rewritten files (relative to ``root``) to their edit records
    (None when only the file is known). ``config`` is ``[tool.eqrewrite.oracle]``.
    ``rollback`` is a callable ``(harness, target, report, coverage)`` returning the
    report after reverting culprit edits, or None. ``explicit`` is a file the user named:
    it must declare a target.
    """
    from .harness.harness import HarnessOptions, HarnessPool
    from .judging.compare import CompareOptions
    from .judging.judge import Verdict

    from_config, run_config = configured(config)
    targets, problems = discover_targets(root, files)
    if explicit is not None and not targets:
        reason = problems[0] if problems else (
            f"{explicit}: declares no target (needs get_inputs() or a module-level `inputs`, "
            "and one nn.Module subclass or one public function)")
        raise OracleError(reason)
    try:
        targets += factory_targets(run_config.get("factory", []))
        settings = CompileSettings().merged(from_config)
        chosen = settings.merged(options.settings)
        for target in targets:
            check_switches(chosen.merged(target.settings).merged(options.settings), root)
    except TargetError as error:
        raise OracleError(str(error)) from None
    temporary = options.reproducers is None
    reproducers = options.reproducers or Path(tempfile.mkdtemp(prefix="eqrewrite-repro-"))
    harness_options = HarnessOptions(settings, options.settings,
                                     CompareOptions(scale=options.tolerance_scale,
                                                    strict=options.strict),
                                     float(run_config.get("timeout", options.timeout)),
                                     int(float(run_config.get("memory-limit",
                                                              options.memory_gb)) * 1024**3),
                                     options.count_breaks, options.separate_break_count,
                                     reproducers)
    # The rollback rewrites files of the rewritten tree: one target at a time then.
    jobs = 1 if rollback is not None else max(1, min(options.parallel, len(targets)))
    pool = HarnessPool(root, rewritten, harness_options, jobs)
    coverage = tuple(str((root / f).resolve()) for f in changed)

    def undo(harness: Harness, target: Target, report: TargetReport,
             coverage: tuple[str, ...]) -> TargetReport:
        if rollback is not None and report.verdict is Verdict.REWRITE_CHANGED_BEHAVIOUR:
            return rollback(harness, target, report, coverage)
        return report

    try:
        with _progress(len(targets) if progress else 0) as advance:
            reports = pool.validate_all(targets, coverage, advance, undo)
    finally:
        pool.close()
        if temporary and not any(reproducers.iterdir()):
            reproducers.rmdir()  # no reproducer written: leave no empty folder behind
    return OracleReport(root, rewritten, tuple(reports),
                        tuple(_unvalidated(root, changed, reports)), tuple(problems),
                        settings.merged(options.settings), pool.start_seconds)


class _progress:
    """A progress bar on stderr (rich) for long runs; nothing when stderr is not a terminal."""

    def __init__(self, total: int):
        self.total = total

    def __enter__(self) -> Callable[[TargetReport], None]:
        if self.total < 2 or not sys.stderr.isatty():
            return lambda report: None
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=None)
        self._bar.__enter__()
        task = self._bar.add_task("validating", total=self.total)
        return lambda report: self._bar.update(task, advance=1,
                                               description=f"{report.target}")

    def __exit__(self, exc_type: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if hasattr(self, "_bar"):
            self._bar.__exit__(exc_type, error, trace)


def _unvalidated(root: Path, changed: Changed, reports: list[TargetReport]) -> list[str]:
    """Rewritten files or edits that no target executed."""
    covered: dict[str, set[int]] = {}
    for report in reports:
        for file, lines in report.covered.items():
            covered.setdefault(file, set()).update(lines)
    missing = []
    for file, edits in changed.items():
        lines = covered.get(str((root / file).resolve()), set())
        if edits is None:
            if not lines:
                missing.append(f"{file}: no target executed this rewritten file")
            continue
        for edit in edits:
            span = set(range(edit.start_line, edit.end_line + 1))
            if not lines & span:
                missing.append(f"{file}:{edit.start_line}: {edit.rule} "
                               f"({edit.before} -> {edit.after}) was not executed")
    return missing


def make_rollback(root: Path, rewritten: Path, changed: Changed, rules: list[Rule],
                  rewrite_options: RewriteOptions) -> Revalidate:
    """A ``rollback`` callable for ``validate_trees`` that bisects over the edits the
    rewrite made, in every round of the engine."""
    from .harness.rollback import Candidate, EditSet, find_culprits

    edit_sets: dict[str, EditSet] = {}

    def rollback(harness: Harness, target: Target, report: TargetReport,
                 coverage: tuple[str, ...]) -> TargetReport:
        if "edits" not in edit_sets:
            edit_sets["edits"] = EditSet(root, rewritten, list(changed), rules, rewrite_options)
        edit_set = edit_sets["edits"]
        candidates = edit_set.candidates(report.covered)
        files = {c.file for c in candidates}

        def is_good(excluded: set[Candidate]) -> bool:
            edit_set.write(excluded, files)
            return harness.behaves_like_original(target, report)

        culprits = find_culprits(candidates, is_good)
        edit_set.write(set(culprits), files)
        reason = f"changed the behaviour of {target.name}: {report.detail}"
        reverted = [edit_set.describe(c, reason) for c in culprits]
        new_report = harness.validate(target, coverage)
        new_report.reverted = reverted
        new_report.detail = (f"reverted {len(reverted)} edit(s); " + new_report.detail).strip()
        return new_report

    return rollback


def check_rewrite_paths(paths: tuple[Path, ...], mode: str) -> None:
    """A rewrite validated with the oracle is of one folder, written to a tree (``mode``:
    the rewrite's; ``check`` and ``diff`` write none): else an OracleError."""
    if mode in ("check", "diff") or len(paths) != 1 or not paths[0].is_dir():
        raise OracleError(
            "--oracle takes one folder and writes the rewritten tree to --out (default: a "
            "temporary folder, removed afterwards); it cannot be combined with --check or "
            "--diff")


def changed_files(root: Path, results: Iterable[FileResult]) -> Changed:
    """The files a rewrite of the folder ``root`` changed, relative to it, with their edits."""
    from eqrewrite.rewriter.api import Status

    return {Path(r.path).resolve().relative_to(root.resolve()).as_posix(): r.edits
            for r in results if r.status is Status.CHANGED}


def validate_rewritten(root: Path, rewritten: Path, results: Iterable[FileResult],
                       rules: list[Rule], rewrite_options: RewriteOptions,
                       options: OracleOptions, rollback: bool = False,
                       progress: bool = False) -> OracleReport:
    """Validate the tree a rewrite of the folder ``root`` wrote to ``rewritten`` (its
    ``results``, under ``rules`` and ``rewrite_options``), every target of ``root`` four
    ways, with the project's ``[tool.eqrewrite.oracle]``; with ``rollback``, the edits that
    changed a target's behaviour are reverted in ``rewritten`` (each target's ``reverted``)
    and the target validated again. What ``--oracle [--rollback]`` does after the rewrite."""
    from eqrewrite.rewriter.api import discover_files, find_project_root, load_config

    changed = changed_files(root, results)
    undo = make_rollback(root, rewritten, changed, rules, rewrite_options) if rollback else None
    config = load_config(find_project_root([root])).oracle
    files = list(discover_files([root], ["*.py"], [], root))
    return validate_trees(root, rewritten, files, changed, options, config, undo,
                          progress=progress)
