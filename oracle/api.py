"""The oracle's public API: ``oracle``, what ``eqrewrite oracle PATH`` does, as a function
returning the typed ``OracleReport`` the command prints (docs/api.md).

The rewriter's own API (``eqrewrite.rewriter.api``: ``rewrite``, ``audit``) never imports
torch nor the oracle, so the oracle's function lives here. Importing this module stays
cheap: torch is imported only when a validation runs (through the harness). Every usage
problem (an unknown backend or config switch, a bad ``[tool.eqrewrite.oracle]`` table, a
file named explicitly that declares no target) raises ``OracleError`` before any worker
starts; the command line (``cli.py``, a thin layer over this module) exits 2 with it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click

from .core.settings import KNOWN_KEYS, CompileSettings, TargetError, parse_settings
from .running.targets import discover_targets, factory_targets

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.api import EditRecord, RewriteOptions, Rule

    from .core.settings import Target
    from .running.harness import Harness, Revalidate, TargetReport

__all__ = ["DEFAULT_PARALLEL", "OracleError", "OracleOptions", "OracleReport", "oracle",
           "validate_path", "validate_trees"]

# What ``validate_trees`` is given for each rewritten file: its edit records, or None if unknown.
Changed = dict[str, "tuple[EditRecord, ...] | None"]

# Two targets in flight keep two cores busy; each costs a worker process (torch imported).
DEFAULT_PARALLEL = min(2, os.cpu_count() or 1)
# Keys of [tool.eqrewrite.oracle] beyond the compile settings.
_RUN_KEYS = ("factory", "timeout", "memory-limit", "reproducers")


class OracleError(click.UsageError):
    """A usage problem found before any worker starts (exit 2 on the command line: it is a
    ``click.UsageError``, so the oracle's commands report it as click does)."""


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
    parallel: int = 2
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
        from .core.judge import FAILING

        return [r for r in self.targets if r.verdict in FAILING]

    @property
    def status(self) -> int:
        """The command's exit status: 1 if some target failed, else 0."""
        return 1 if self.failed else 0

    def to_json(self) -> dict[str, Any]:
        """The ``--format json`` document (JSON-ready)."""
        from .running import report

        return report.document(list(self.targets), list(self.unvalidated),
                               list(self.problems), self.settings, self.start_seconds)

    def table(self, show_output: bool = False) -> str:
        """The text report, most severe first (``show_output``: what targets printed)."""
        from .running import report

        return report.table(list(self.targets), list(self.unvalidated), list(self.problems),
                            self.settings, show_output=show_output)


def oracle(path: str | os.PathLike[str], *, rewritten: str | os.PathLike[str] | None = None,
           settings: Mapping[str, object] | None = None, timeout: float = 300.0,
           memory_gb: float = 16.0, strict: bool = False, tolerance_scale: float = 1.0,
           reproducers: str | os.PathLike[str] | None = None, count_breaks: bool = True,
           separate_break_count: bool = False, parallel: int = DEFAULT_PARALLEL,
           progress: bool = False) -> OracleReport:
    """Validate the targets under ``path`` (a folder, or one file that must declare a
    target), as ``eqrewrite oracle PATH`` does: eager against compiled, and, given a
    ``rewritten`` copy of the folder, original against rewritten, four ways.

    ``settings``: compile settings, as ``[tool.eqrewrite.oracle]`` spells them (e.g.
    ``{"backend": "eager", "dynamo.capture_scalar_outputs": True}``); ``timeout``: seconds
    per run; ``memory_gb``: per worker; ``strict``: compare signs of zero and NaN too;
    ``reproducers``: where reproducers of compiler bugs and crashes go (default: a
    temporary folder);
    ``count_breaks``, ``separate_break_count``: graph breaks; ``parallel``: targets at
    once; ``progress``: a bar on stderr. Raises OracleError (before any worker starts) and
    ConfigError (a bad ``pyproject.toml``)."""
    options = OracleOptions(dict(settings or {}), timeout, memory_gb, strict, tolerance_scale,
                            Path(reproducers) if reproducers is not None else None,
                            count_breaks, separate_break_count, parallel)
    return validate_path(Path(path), Path(rewritten) if rewritten is not None else None,
                         options, progress=progress)


def validate_path(path: Path, rewritten: Path | None, options: OracleOptions,
                  progress: bool = False) -> OracleReport:
    """``oracle`` with its options gathered (what ``eqrewrite oracle`` runs)."""
    from eqrewrite.rewriter.api import discover_files, find_project_root, load_config

    if not path.exists():
        raise OracleError(f"{path}: no such file or folder")
    root = path if path.is_dir() else path.parent
    files = list(discover_files([path], ["*.py"], [], root))
    changed: Changed = {}
    if rewritten is not None:
        if not rewritten.is_dir():
            raise OracleError(f"{rewritten}: no such folder")
        for file in files:
            relative = file.resolve().relative_to(root.resolve())
            other = rewritten / relative
            if other.is_file() and other.read_bytes() != file.read_bytes():
                changed[relative.as_posix()] = None
    config = load_config(find_project_root([path]))
    return validate_trees(root, rewritten, files, changed, options, config.oracle,
                          explicit=path if path.is_file() else None, progress=progress)


def configured(config: dict[str, Any]) -> tuple[dict[str, object], dict[str, Any]]:
    """``[tool.eqrewrite.oracle]`` split into compile settings and run keys, validated:
    ``inductor``/``dynamo`` sub-tables become ``inductor.<key>``/``dynamo.<key>``."""
    settings: dict[str, object] = {}
    run: dict[str, Any] = {}
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
    return settings, run


def _check_run_keys(run: dict[str, Any]) -> None:
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
                   options: OracleOptions, config: dict[str, Any],
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
    from .core.compare import CompareOptions
    from .core.judge import Verdict
    from .running.harness import HarnessOptions, HarnessPool

    from_config, run_config = configured(config)
    targets, problems = discover_targets(root, files)
    if explicit is not None and not targets:
        reason = problems[0] if problems else (
            f"{explicit}: declares no target (needs get_inputs() or a module-level `inputs`, "
            "and one nn.Module subclass or one public function)")
        raise OracleError(reason)
    try:
        targets += factory_targets(run_config)
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
    from .running.rollback import Candidate, EditSet, find_culprits

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
