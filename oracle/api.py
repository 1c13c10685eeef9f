"""The oracle's public API: its commands as functions returning typed results
(docs/api.md): ``oracle`` (``eqrewrite oracle PATH``: an ``OracleReport``), ``generate``
(``eqrewrite gen``: a ``GenerateReport``), ``reduce`` (``eqrewrite reduce``: a reduction's
``Result``), ``campaign`` (``eqrewrite campaign``: a ``CampaignReport``) and ``report``
(``eqrewrite report``: the issue's ``Report``). One concern, the API, though over 600 lines:
the commands' work is in the packages below; what is here is each function's arguments
checked and its deep modules called.

The rewriter's own API (``eqrewrite.rewriter.api``: ``rewrite``, ``audit``) never imports
torch nor the oracle, so the oracle's functions live here. Importing this module stays
cheap: torch and the deep modules are imported only when a function runs. Every usage
problem (an unknown backend or config switch, a bad ``[tool.eqrewrite.oracle]`` table, a
file named explicitly that declares no target, an unknown op id, a folder that is no
reproducer or finding) raises ``OracleError`` before any worker starts, and a reproducer
that does not fail ``NotReproducedError``: plain exceptions, not click's. The command
line (``cli.py``, ``generate/cli.py``, ``campaign/cli.py``, ``minimising/cli.py``,
``bugreport/cli.py``: each a thin layer over one function here) maps them to its exit
codes (2 and 1) and messages.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict, cast

from .harness.targets import discover_targets, factory_targets
from .judging.settings import KNOWN_KEYS, CompileSettings, TargetError, parse_settings

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.api import EditRecord, RewriteOptions, Rule

    from .bugreport.issue import Report
    from .formats import CampaignSummary, FindingSummary, OracleDocument
    from .generate import BatchStats, GenConfig
    from .generate.program import ProgramRecord
    from .harness.harness import Harness, Revalidate, TargetReport
    from .judging.settings import Target
    from .minimising.outputs import Result

__all__ = ["DEFAULT_PARALLEL", "CampaignReport", "GenerateReport", "NotReproducedError",
           "OracleError", "OracleOptions", "OracleReport", "campaign", "generate", "oracle",
           "reduce", "report", "validate_path", "validate_trees"]

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
    reports it as a usage error with this message)."""


class NotReproducedError(Exception):
    """``reduce``: the reproducer does not fail (any more) with its verdict (exit 1)."""


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


def configured(config: dict[str, Any]) -> tuple[dict[str, object], RunKeys]:
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
    return settings, cast(RunKeys, run)


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


# -- eqrewrite gen -----------------------------------------------------------------------------

@dataclass(frozen=True)
class GenerateReport:
    """What ``generate`` made: each valid program's metadata (``programs``, as in
    ``manifest.json``), the seeds without one (``errors``: why), the batch's statistics
    (``stats``: validity, op coverage, features, dtypes, layouts; ``stats.render()`` and
    ``stats.to_dict()`` are what ``--stats`` prints) and the folder written (``out``)."""

    programs: tuple[ProgramRecord, ...]
    errors: tuple[str, ...]
    stats: BatchStats
    out: Path | None

    @property
    def status(self) -> int:
        """The command's exit status: 1 if some seed gave no valid program, else 0."""
        return 1 if self.stats.failed else 0


def generate(seeds: int | Iterable[int] = 1, *, start: int = 0,
             out: str | os.PathLike[str] | None = None, statements: tuple[int, int] = (5, 12),
             inputs: tuple[int, int] = (1, 3), boundary: float = 0.35,
             features: Mapping[str, float] | Iterable[tuple[str, float]] = (),
             ops: Iterable[str] | None = None, strict: bool = False,
             generator_outputs: bool = False, compile_settings: str = "varied", jobs: int = 1,
             say: Callable[[str], None] = lambda _: None) -> GenerateReport:
    """Generate programs, as ``eqrewrite gen`` does: ``seeds`` a count (seeds ``start`` ..
    ``start + seeds - 1``) or the seeds themselves; ``out``: a folder for ``gen_<seed>.py``
    files and ``manifest.json`` (None: nothing written). ``statements`` and ``inputs`` are
    ``(low, high)`` bounds, ``features`` weights by name (0 disables one), ``ops`` the op
    ids to use (None: the whole table), ``compile_settings`` ``"varied"`` or ``"fixed"``,
    ``jobs`` worker processes; ``say`` gets the progress lines and each seed's error.
    Raises OracleError for an unknown op id or a bad setting, before any program is made."""
    from .generate import BatchStats, GenConfig, Program, default_table, generate_many

    chosen_seeds = list(range(start, start + seeds) if isinstance(seeds, int) else seeds)
    table = default_table()
    chosen = frozenset(ops) if ops is not None else None
    unknown = sorted((chosen or frozenset()) - set(table.by_id()))
    if unknown:
        raise OracleError(f"unknown op ids: {', '.join(unknown)}")
    weights = tuple(features.items() if isinstance(features, Mapping) else features)
    try:
        config = GenConfig(statements=statements, inputs=inputs, boundary=boundary,
                           features=weights, ops=chosen, strict=strict,
                           generator_outputs=generator_outputs,
                           compile_settings=compile_settings)
        config.weights()
    except ValueError as error:
        raise OracleError(str(error)) from None
    folder = Path(out) if out is not None else None
    batch = BatchStats(table)
    programs: list[ProgramRecord] = []
    errors: list[str] = []
    for number, (program_seed, result) in enumerate(
            generate_many(chosen_seeds, config, jobs), 1):
        batch.add(program_seed, result, config.max_attempts)
        if isinstance(result, Program):
            programs.append(result.metadata())
            if folder is not None:
                result.write(folder)
        else:
            errors.append(str(result))
            say(f"error: {result}")
        if number % 50 == 0:
            say(f"{number}/{len(chosen_seeds)} programs")
    if folder is not None:
        _write_manifest(folder, config, programs, batch)
    return GenerateReport(tuple(programs), tuple(errors), batch, folder)


def _write_manifest(out: Path, config: GenConfig, programs: list[ProgramRecord],
                    batch: BatchStats) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "config": {"statements": list(config.statements), "inputs": list(config.inputs),
                   "boundary": config.boundary, "features": dict(config.features),
                   "ops": sorted(config.ops) if config.ops else None,
                   "strict": config.strict, "generator_outputs": config.generator_outputs,
                   "compile_settings": config.compile_settings},
        "programs": programs,
        "stats": batch.to_dict(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


# -- eqrewrite reduce --------------------------------------------------------------------------

def reduce(folder: str | os.PathLike[str], *, out: str | os.PathLike[str] | None = None,
           max_tests: int = 500, timeout: float | None = None, time_budget: float | None = None,
           confirm_every: int = 16, verify: bool = True, jobs: int = 1,
           say: Callable[[str], None] = lambda _: None) -> Result:
    """Shrink the reproducer in ``folder`` (a compiler-bug or compile-crash finding) to the
    smallest program with the same verdict and signature, as ``eqrewrite reduce`` does;
    write ``minimal.py`` and ``reduced/`` to ``out`` (default: ``folder``). ``max_tests``
    candidates at most, ``timeout`` seconds each (default: 5 times the first run, at least
    60), ``time_budget`` seconds in all; ``confirm_every``: candidates a cheaper backend
    keeps before the full one confirms (0: always the full one); ``verify``: run the
    written scripts once more; ``jobs``: candidates judged at once; ``say`` gets the
    progress lines. Returns the reduction's ``Result`` (its ``to_dict()`` is the JSON
    report). Raises OracleError (not a reproducer folder) and NotReproducedError."""
    from .minimising.reduce import Budget, NotReproduced, ReduceError, reduce_folder

    try:
        budget = Budget(max_tests, timeout, time_budget, confirm_every)
        return reduce_folder(Path(folder), Path(out) if out is not None else None, budget,
                             say, verify=verify, jobs=jobs)
    except ReduceError as error:
        raise OracleError(str(error)) from None
    except NotReproduced as error:
        raise NotReproducedError(str(error)) from None


# -- eqrewrite campaign ------------------------------------------------------------------------

@dataclass(frozen=True)
class CampaignReport:
    """What ``campaign`` found: the folder (``out``: ``journal.jsonl``, ``summary.json``,
    ``findings/``) and the summary written to ``summary.json`` (``summary``: seeds,
    classes, findings, known issues matched, programs per minute, why it stopped)."""

    out: Path
    summary: CampaignSummary

    @property
    def findings(self) -> list[FindingSummary]:
        """The new findings, one per unique signature (``class``, ``folder``, ``seeds``...)."""
        return list(self.summary["findings"])

    @property
    def status(self) -> int:
        """The command's exit status: 1 if there are new findings, else 0."""
        return 1 if self.findings else 0


def campaign(out: str | os.PathLike[str], seeds: Iterable[int] = range(100), *,
             jobs: int = DEFAULT_PARALLEL, time_budget: float | None = None,
             settings: Mapping[str, object] | None = None,
             known_issues: str | os.PathLike[str] | None | bool = True,
             executor: str = "local", address: str | None = None, timeout: float = 300.0,
             strict: bool = False, unsafe: bool = False, rules: Iterable[str] = ("equivalences",),
             statements: tuple[int, int] = (5, 12), ops: Iterable[str] | None = None,
             features: Mapping[str, float] | Iterable[tuple[str, float]] = (),
             compile_settings: str = "varied", reduce: bool = False,
             reduce_budget: float = 600.0, progress: bool | None = None) -> CampaignReport:
    """Generate a program per seed, rewrite it with ``rules``, validate it four ways and
    keep one folder per unique finding under ``out``, as ``eqrewrite campaign`` does (a
    folder holding a campaign with the same settings is resumed: finished seeds are
    skipped). ``settings``: compile settings as ``oracle`` takes them (default backend
    ``inductor``); ``known_issues``: a YAML file of issues to count but not report (True:
    the shipped list; None or False: none); ``executor``: ``"local"`` or ``"ray"`` (at
    ``address``); ``time_budget``: seconds before no more seeds are submitted;
    ``statements``, ``ops``, ``features``, ``compile_settings``: the generator's, as
    ``generate`` takes them; ``reduce``: reduce each new compiler-bug or compile-error
    finding, ``reduce_budget`` seconds each; ``progress``: live progress on stderr (None:
    when it is a terminal). Raises OracleError before any job starts. KeyboardInterrupt
    leaves the finished seeds in the journal."""
    from .campaign.executors import ExecutorError, LocalExecutor, RayExecutor
    from .campaign.job import JobSpec, gen_record, run_context
    from .campaign.known import DEFAULT_FILE, KnownIssuesError, load
    from .campaign.runner import Campaign, Runner
    from .campaign.store import CampaignError, open_campaign

    folder = Path(out)
    if address and executor == "local":
        raise OracleError("--address is for --executor ray")
    chosen: dict[str, object] = {"backend": "inductor"} | dict(settings or {})
    try:
        compiled = CompileSettings().merged(chosen)
    except TargetError as error:
        raise OracleError(str(error)) from None
    if ":" in compiled.backend and str(Path.cwd()) not in sys.path:
        # Jobs are spawned with this sys.path: a backend module beside the user is found.
        sys.path.insert(0, str(Path.cwd()))
    check_switches(compiled, Path.cwd())
    weights = tuple(features.items() if isinstance(features, Mapping) else features)
    try:
        gen = gen_record(statements, list(ops) if ops is not None else None, weights,
                         compile_settings)
        issues = load(DEFAULT_FILE if known_issues is True else
                      Path(known_issues) if known_issues else None)
    except (ValueError, KnownIssuesError) as error:
        raise OracleError(str(error)) from None
    packs = tuple(rules)
    spec = JobSpec(gen=gen, packs=packs, unsafe=unsafe, settings=chosen, timeout=timeout,
                   strict=strict, work_root=str(folder.resolve() / "work")
                   if executor == "local" else None)
    context = run_context(chosen, spec)
    try:
        finished = open_campaign(folder, {"generator": gen, "rules": list(packs),
                                          "unsafe": unsafe, "settings": chosen,
                                          "strict": strict, "torch": context["torch"]},
                                 resume=True)
        runner_executor: LocalExecutor | RayExecutor = (
            LocalExecutor(spec, jobs) if executor == "local" else
            RayExecutor(spec, jobs, address))
    except (CampaignError, ExecutorError) as error:
        raise OracleError(str(error)) from None
    seed_list = seeds if isinstance(seeds, range) else list(seeds)
    run = Campaign(seed_list, folder, runner_executor, context,
                   issues, time_budget, reduce, progress, reduce_budget=reduce_budget)
    return CampaignReport(folder, Runner(run, finished).run())


# -- eqrewrite report --------------------------------------------------------------------------

def report(finding: str | os.PathLike[str], *, ablation: bool = True, bisect: bool = True,
           timeout: float = 300.0, bisect_budget: float = 900.0,
           known_issues: str | os.PathLike[str] | None | bool = True,
           search_upstream: bool = False,
           say: Callable[[str], None] = lambda _: None) -> Report:
    """Write ``finding`` (a campaign's finding folder) up as a PyTorch issue, as ``eqrewrite
    report`` does: ``ablation`` runs the script under other backends and modes, ``bisect``
    under the compiler bisector (``bisect_budget`` seconds), ``timeout`` seconds each run;
    ``known_issues``: the file to match (True: the shipped one; None or False: none);
    ``search_upstream``: ask GitHub's issue search too; ``say`` gets the progress lines.
    Returns the ``Report``: ``markdown()`` is the issue, ``not_written`` says why there is
    none (the script does not fail here, or not the same way twice), ``outcome`` and
    ``seconds`` what ran. Raises OracleError (not a finding folder, a bad known-issues
    file)."""
    from .bugreport.finding import ReportError
    from .bugreport.issue import Options, build
    from .campaign.known import DEFAULT_FILE, KnownIssuesError

    issues = DEFAULT_FILE if known_issues is True else (
        Path(known_issues) if known_issues else None)
    options = Options(ablation, bisect, timeout, bisect_budget, issues,
                      search_upstream=search_upstream)
    try:
        return build(Path(finding), options, say)
    except (ReportError, KnownIssuesError) as error:
        raise OracleError(str(error)) from None
