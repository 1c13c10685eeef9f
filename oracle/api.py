"""The oracle's public API: its commands as functions returning typed results
(docs/api.md): ``oracle`` (``eqrewrite oracle PATH``: an ``OracleReport``),
``validated_rewrite`` (``eqrewrite PATH --oracle [--rollback]``: a ``ValidatedRewrite``),
``generate`` (``eqrewrite gen``: a ``GenerateReport``), ``reduce`` (``eqrewrite reduce``: a
reduction's ``Result``), ``campaign`` (``eqrewrite campaign``: a ``CampaignReport``) and
``report`` (``eqrewrite report``: the issue's ``Report``). What is here is each function's
arguments checked and its deep modules called; validating trees, which ``oracle`` and
``validated_rewrite`` share with the rewrite command's ``--oracle`` step, is
``validation.py``'s, whose names (``OracleOptions``, ``OracleReport``, ``validate_trees``,
``configured``, ``check_switches``...) this module exposes: the oracle's packages and its
command line import them from here.

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
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .judging.settings import CompileSettings, TargetError
from .validation import (
    DEFAULT_PARALLEL,
    Changed,
    OracleError,
    OracleOptions,
    OracleReport,
    RunKeys,
    check_rewrite_paths,
    check_switches,
    compile_settings,
    configured,
    make_rollback,
    validate_rewritten,
    validate_trees,
)

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.api import RewriteReport, RewriteSettings

    from .bugreport.issue import Report
    from .formats import CampaignSummary, FindingSummary
    from .generate import BatchStats, GenConfig
    from .generate.program import ProgramRecord
    from .harness.rollback import Reverted
    from .minimising.outputs import Result

__all__ = ["DEFAULT_PARALLEL", "CampaignReport", "Changed", "GenerateReport",
           "NotReproducedError", "OracleError", "OracleOptions", "OracleReport", "RunKeys",
           "ValidatedRewrite", "campaign", "check_rewrite_paths", "check_switches",
           "compile_settings", "configured", "generate", "make_rollback", "oracle", "reduce",
           "report", "validate_path", "validate_rewritten", "validate_trees",
           "validated_rewrite"]


class NotReproducedError(Exception):
    """``reduce``: the reproducer does not fail (any more) with its verdict (exit 1)."""


# -- eqrewrite oracle --------------------------------------------------------------------------

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


# -- eqrewrite PATH --oracle [--rollback] ------------------------------------------------------

@dataclass(frozen=True)
class ValidatedRewrite:
    """What ``validated_rewrite`` did: the rewrite's ``RewriteReport`` (``rewrite``) and the
    oracle's ``OracleReport`` on the tree it wrote (``oracle``; None when some file could
    not be processed: nothing is validated then, as on the command line). ``tree``: the
    rewritten tree (with the rollback's reverts), None when it was a temporary folder, now
    removed."""

    rewrite: RewriteReport
    oracle: OracleReport | None
    tree: Path | None

    @property
    def reverted(self) -> list[Reverted]:
        """The edits the rollback reverted, every target's: ``file``, ``line`` (of the
        original text), ``rule``, ``before``, ``after``, ``reason``."""
        if self.oracle is None:
            return []
        return [edit for target in self.oracle.targets for edit in target.reverted]

    @property
    def status(self) -> int:
        """The command's exit status: 123 if some file could not be processed, 1 if some
        target failed, else 0."""
        if self.oracle is None:
            return self.rewrite.status
        return self.oracle.status or self.rewrite.status

    def to_json(self) -> str:
        """The ``--format json`` document of ``eqrewrite PATH --oracle``: the rewrite's, the
        oracle's report under ``steps.oracle``."""
        steps = {"oracle": dict(self.oracle.to_json())} if self.oracle is not None else None
        return self.rewrite.to_json(steps)


def validated_rewrite(path: str | os.PathLike[str], rewrite: RewriteSettings | None = None,
                      *, rollback: bool = False, options: OracleOptions | None = None,
                      progress: bool = False) -> ValidatedRewrite:
    """Rewrite the folder ``path`` and validate the rewrite with the oracle, as ``eqrewrite
    PATH --oracle [--rollback]`` does: every target under ``path`` run four ways, original
    against rewritten; with ``rollback``, the edits that changed a target's behaviour are
    found (over every round of the rewrite) and reverted in the rewritten tree, the rest
    kept.

    ``rewrite``: the rewriter's ``RewriteSettings`` (its ``out``: where to write the
    rewritten tree; default a temporary folder, removed before returning; ``mode`` must
    write: not ``check`` or ``diff``); ``options``: how to validate (``OracleOptions``:
    compile ``settings`` such as ``{"backend": "eager"}``, ``timeout``...); ``progress``: a
    bar on stderr. Nothing is printed, and the sources under ``path`` are never written.
    Raises OracleError (before any worker starts) and the rewriter's ``USAGE_ERRORS``."""
    from eqrewrite.rewriter.api import RewriteSettings
    from eqrewrite.rewriter.api import rewrite as rewrite_files

    folder = Path(path)
    chosen = rewrite if rewrite is not None else RewriteSettings()
    check_rewrite_paths((folder,), chosen.mode)
    tree = chosen.out if chosen.out is not None else Path(
        tempfile.mkdtemp(prefix="eqrewrite-rewritten-"))
    try:
        done = rewrite_files(folder, replace(chosen, out=tree))
        if done.errors:  # as on the command line: no validation of a partial tree
            return ValidatedRewrite(done, None, chosen.out)
        checked = validate_rewritten(folder, tree, done.results, list(done.rules),
                                     done.options, options or OracleOptions(), rollback,
                                     progress)
        return ValidatedRewrite(done, checked, chosen.out)
    finally:
        if chosen.out is None:
            shutil.rmtree(tree, ignore_errors=True)


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
