"""``eqrewrite oracle`` and the ``--oracle`` step of a rewrite run.

torch is imported only inside these functions (through the harness), so ``eqrewrite --help``
and plain rewrites stay fast. Every usage problem (an unknown backend or config switch, a bad
``[tool.eqrewrite.oracle]`` table, a file named explicitly that declares no target) is found
before any worker starts, and exits 2 with its cause.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .core.settings import KNOWN_KEYS, CompileSettings, TargetError, parse_settings
from .running.targets import discover_targets, factory_targets

if TYPE_CHECKING:  # the harness imports torch: only when a validation runs
    from eqrewrite.rewriter.api import EditRecord, RewriteOptions, Rule
    from eqrewrite.rewriter.plugins import RewriteRun

    from .core.settings import Target
    from .running.harness import Harness, Revalidate, TargetReport

_Command = TypeVar("_Command", bound=Callable[..., Any])
# What ``validate`` is given for each rewritten file: its edit records, or None if unknown.
Changed = dict[str, "tuple[EditRecord, ...] | None"]

# Two targets in flight keep two cores busy; each costs a worker process (torch imported).
DEFAULT_PARALLEL = min(2, os.cpu_count() or 1)
# Keys of [tool.eqrewrite.oracle] beyond the compile settings.
_RUN_KEYS = ("factory", "timeout", "memory-limit", "reproducers")


@dataclass
class OracleOptions:
    """Command-line choices for a validation run."""

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


def compile_options(command: _Command) -> _Command:
    """Decorate a click command with the oracle's compile and comparison options."""
    options = [
        click.option("--backend", help="inductor (default, as torch.compile), aot_eager or "
                     "eager (Dynamo only: graph breaks, no code generation), or module:function."),
        click.option("--mode", help="torch.compile mode, e.g. max-autotune."),
        click.option("--dynamic/--no-dynamic", default=None, help="torch.compile dynamic."),
        click.option("--fullgraph", is_flag=True, default=None, help="torch.compile fullgraph."),
        click.option("--inductor-config", "inductor", multiple=True, metavar="KEY=VALUE",
                     help="torch._inductor.config switch; repeatable."),
        click.option("--dynamo-config", "dynamo", multiple=True, metavar="KEY=VALUE",
                     help="torch._dynamo.config switch (e.g. capture_scalar_outputs=true); "
                     "repeatable."),
        click.option("--timeout", type=float, default=300.0, show_default=True,
                     help="Seconds per run before a target counts as hung."),
        click.option("--memory-limit", "memory_gb", type=float, default=16.0, show_default=True,
                     help="GiB of address space per worker; beyond it a target counts as OOM."),
        click.option("--strict", is_flag=True, help="Also compare signs of zero and NaN."),
        click.option("--tolerance-scale", type=float, default=1.0, show_default=True,
                     help="Multiply every rtol/atol."),
        click.option("--reproducers", type=click.Path(file_okay=False, path_type=Path),
                     help="Folder for reproducers of compiler-bug verdicts (default: beside "
                     "--output, else a new temporary folder)."),
        click.option("--no-breaks", is_flag=True, help="Skip graph-break counting."),
        click.option("--separate-break-count", is_flag=True,
                     help="Count graph breaks apart from the runs (explain and a fullgraph "
                     "compile with Dynamo only); slower, also says whether fullgraph=True "
                     "compiles."),
        click.option("--parallel", type=click.IntRange(min=1), default=DEFAULT_PARALLEL,
                     show_default=True,
                     help="Targets validated at once, each with its own worker process."),
        click.option("--show-output", is_flag=True,
                     help="Print what targets printed and what the compiler logged."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def options_from(backend: str | None, mode: str | None, dynamic: bool | None,
                 fullgraph: bool | None, inductor: Iterable[str], dynamo: Iterable[str],
                 timeout: float, memory_gb: float, strict: bool, tolerance_scale: float,
                 reproducers: Path | None, no_breaks: bool, separate_break_count: bool,
                 parallel: int, show_output: bool, output_format: str = "text",
                 output: Path | None = None) -> OracleOptions:
    """Collect the decorated options into OracleOptions (usage errors exit 2)."""
    settings: dict[str, object] = {}
    for key, value in (("backend", backend), ("mode", mode), ("dynamic", dynamic),
                       ("fullgraph", fullgraph)):
        if value is not None:
            settings[key] = value
    try:
        settings.update({f"inductor.{k}": v for k, v in parse_settings(list(inductor)).items()})
        settings.update({f"dynamo.{k}": v for k, v in parse_settings(list(dynamo)).items()})
    except TargetError as error:
        raise click.UsageError(str(error)) from None
    if reproducers is None and output is not None:
        reproducers = output.parent / f"{output.stem}-reproducers"
    return OracleOptions(settings, timeout, memory_gb, strict, tolerance_scale, reproducers,
                         not no_breaks, separate_break_count, parallel,
                         output_format, output, show_output)


@click.command("oracle")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--rewritten", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A rewritten copy of PATH: validate the pair four ways.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of stdout.")
@compile_options
def oracle_command(path: Path, rewritten: Path | None, output_format: str,
                   output: Path | None, **kwargs: Any) -> None:
    """Validate targets under PATH: eager vs compiled, and vs a rewritten tree if given."""
    from eqrewrite.rewriter.api import ConfigError, discover_files, find_project_root, load_config

    options = options_from(output_format=output_format, output=output, **kwargs)
    root = path if path.is_dir() else path.parent
    files = list(discover_files([path], ["*.py"], [], root))
    changed: Changed = {}
    if rewritten is not None:
        for file in files:
            relative = file.resolve().relative_to(root.resolve())
            other = rewritten / relative
            if other.is_file() and other.read_bytes() != file.read_bytes():
                changed[relative.as_posix()] = None
    try:
        config = load_config(find_project_root([path]))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    status, _ = validate(root, rewritten, files, changed, options, config.oracle,
                         explicit=path if path.is_file() else None)
    sys.exit(status)


def validate_rewrite(run: RewriteRun, rollback: bool,
                     flags: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The rewrite command's ``--oracle`` step: validate ``run.paths[0]`` against the tree
    written to ``run.out_root`` (``run`` is the rewriter's ``RewriteRun``). With a machine
    format the report is returned for the rewrite's JSON document instead of printed."""
    from eqrewrite.rewriter.api import Status, discover_files, find_project_root, load_config

    root, out_root = run.paths[0], run.out_root
    assert out_root is not None  # the --oracle step always has the rewrite write a tree
    click.echo(f"validating {root} against the rewritten tree {out_root}", err=True)
    changed: Changed = {Path(r.path).resolve().relative_to(root.resolve()).as_posix(): r.edits
                        for r in run.results if r.status is Status.CHANGED}
    undo = make_rollback(root, out_root, changed, run.rules, run.options) if rollback else None
    config = load_config(find_project_root([root])).oracle
    files = list(discover_files([root], ["*.py"], [], root))
    embedded = "embedded" if run.output_format != "text" else "text"
    return validate(root, out_root, files, changed,
                    options_from(output_format=embedded, **flags), config, undo)


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
            raise click.UsageError(
                f"[tool.eqrewrite.oracle]: unknown key {key!r} (known: "
                f"{', '.join(KNOWN_KEYS + _RUN_KEYS)}, inductor.<option>, dynamo.<option>, "
                "or [tool.eqrewrite.oracle.inductor] / [tool.eqrewrite.oracle.dynamo] tables)")
    try:
        CompileSettings().merged(settings)
    except TargetError as error:
        raise click.UsageError(f"[tool.eqrewrite.oracle]: {error}") from None
    _check_run_keys(run)
    return settings, run


def _check_run_keys(run: dict[str, Any]) -> None:
    """Numbers where numbers are meant, text where paths and names are."""
    for key in ("timeout", "memory-limit"):
        value = run.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or value <= 0):
            raise click.UsageError(f"[tool.eqrewrite.oracle]: {key} must be a positive number, "
                                   f"got {value!r}")
    if "reproducers" in run and not isinstance(run["reproducers"], str):
        raise click.UsageError("[tool.eqrewrite.oracle]: reproducers must be a folder path, "
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
            raise click.UsageError(f"--backend {backend}: no module {module_name!r} "
                                   f"(looked in {root} and on sys.path)")
    elif backend not in torch._dynamo.list_backends(exclude_tags=()):
        known = torch._dynamo.list_backends(exclude_tags=())
        raise click.UsageError(f"unknown backend {backend!r} (known: {', '.join(known)}, or "
                               "module:function)")
    for prefix, table, module in (("inductor", settings.inductor_config, torch._inductor.config),
                                  ("dynamo", settings.dynamo_config, torch._dynamo.config)):
        names = list(module._config)
        for key, _ in table:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise click.UsageError(f"unknown {prefix} config switch {key!r}{hint}")


def validate(root: Path, rewritten: Path | None, files: list[Path],
             changed: Changed, options: OracleOptions, config: dict[str, Any],
             rollback: Revalidate | None = None,
             explicit: Path | None = None) -> tuple[int, dict[str, Any]]:
    """Validate every target; print the report; return the exit code (1 if any fails) and
    the report as a JSON-ready document. With the output format ``embedded`` the document
    is not printed (the caller embeds it) and the table goes to stderr.

    ``changed`` maps rewritten files (relative to ``root``) to their edit records
    (None when only the file is known). ``rollback`` is a callable
    ``(harness, target, report, coverage)`` returning the report after reverting
    culprit edits, or None. ``explicit`` is a file the user named: it must declare a target.
    """
    from .core.compare import CompareOptions
    from .core.judge import FAILING, Verdict
    from .running.harness import HarnessOptions, HarnessPool

    from_config, run_config = configured(config)
    targets, problems = discover_targets(root, files)
    if explicit is not None and not targets:
        reason = problems[0] if problems else (
            f"{explicit}: declares no target (needs get_inputs() or a module-level `inputs`, "
            "and one nn.Module subclass or one public function)")
        raise click.UsageError(reason)
    try:
        targets += factory_targets(run_config)
        settings = CompileSettings().merged(from_config)
        chosen = settings.merged(options.settings)
        for target in targets:
            check_switches(chosen.merged(target.settings).merged(options.settings), root)
    except TargetError as error:
        raise click.UsageError(str(error)) from None
    if not targets:
        click.echo(f"no targets under {root}", err=True)
    temporary = options.reproducers is None
    reproducers = options.reproducers or Path(tempfile.mkdtemp(prefix="eqrewrite-repro-"))
    harness_options = HarnessOptions(settings, options.settings,
                              CompareOptions(scale=options.tolerance_scale,
                                             strict=options.strict),
                              float(run_config.get("timeout", options.timeout)),
                              int(float(run_config.get("memory-limit", options.memory_gb))
                                  * 1024**3),
                              options.count_breaks, options.separate_break_count, reproducers)
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
        with _progress(len(targets)) as advance:
            reports = pool.validate_all(targets, coverage, advance, undo)
    finally:
        pool.close()
        if temporary and not any(reproducers.iterdir()):
            reproducers.rmdir()  # no reproducer written: leave no empty folder behind
    from .running import report as oracle_report

    unvalidated = _unvalidated(root, changed, reports)
    in_force = settings.merged(options.settings)
    record = oracle_report.document(reports, unvalidated, problems, in_force, pool.start_seconds)
    if options.output_format == "json":
        text = json.dumps(record, indent=2)
    else:
        text = oracle_report.table(reports, unvalidated, problems, in_force,
                                   show_output=options.show_output)
    if options.output is not None:
        options.output.write_text(text + "\n", encoding="utf-8")
        click.echo(f"report written to {options.output}", err=True)
    elif options.output_format != "embedded":
        click.echo(text)
    else:  # inside the rewrite command's JSON document: people read the table on stderr
        click.echo(oracle_report.table(reports, unvalidated, problems, in_force), err=True)
    return 1 if any(r.verdict in FAILING for r in reports) else 0, record


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
    """A ``rollback`` callable for ``validate`` that bisects over the edits the rewrite
    made, in every round of the engine."""
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
