"""``eqrewrite oracle`` and the ``--oracle`` step of a rewrite run.

torch is imported only inside these functions (through the harness), so
``eqrewrite --help`` and plain rewrites stay fast.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from .targets import CompileSettings, TargetError, discover_targets, factory_targets

FAILING = {"rewrite-changed-behaviour", "compiler-bug", "compile-error", "crash", "timeout",
           "oom", "error"}


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
    output_format: str = "text"


def compile_options(command):
    """Decorate a click command with the oracle's compile and comparison options."""
    options = [
        click.option("--backend", help="eager, aot_eager, inductor, or module:function "
                     "(default: eager, or the target's header)."),
        click.option("--mode", help="torch.compile mode, e.g. max-autotune."),
        click.option("--dynamic/--no-dynamic", default=None, help="torch.compile dynamic."),
        click.option("--fullgraph", is_flag=True, default=None, help="torch.compile fullgraph."),
        click.option("--inductor-config", "inductor", multiple=True, metavar="KEY=VALUE",
                     help="Inductor config override; repeatable."),
        click.option("--timeout", type=float, default=300.0, show_default=True,
                     help="Seconds per run before a target counts as hung."),
        click.option("--memory-limit", "memory_gb", type=float, default=16.0, show_default=True,
                     help="GiB of address space per worker; beyond it a target counts as OOM."),
        click.option("--strict", is_flag=True, help="Also compare signs of zero and NaN."),
        click.option("--tolerance-scale", type=float, default=1.0, show_default=True,
                     help="Multiply every rtol/atol."),
        click.option("--reproducers", type=click.Path(file_okay=False, path_type=Path),
                     default=Path("eqrewrite-repro"), show_default=True,
                     help="Where to write reproducer scripts for compiler-bug candidates."),
        click.option("--no-breaks", is_flag=True, help="Skip graph-break counting."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def options_from(backend, mode, dynamic, fullgraph, inductor, timeout, memory_gb, strict,
                 tolerance_scale, reproducers, no_breaks, output_format) -> OracleOptions:
    """Collect the decorated options into OracleOptions (usage errors exit 2)."""
    from .targets import parse_settings

    settings: dict[str, object] = {}
    for key, value in (("backend", backend), ("mode", mode), ("dynamic", dynamic),
                       ("fullgraph", fullgraph)):
        if value is not None:
            settings[key] = value
    try:
        settings.update({f"inductor.{k}": v for k, v in parse_settings(list(inductor)).items()})
    except TargetError as error:
        raise click.UsageError(str(error)) from None
    return OracleOptions(settings, timeout, memory_gb, strict, tolerance_scale, reproducers,
                         not no_breaks, output_format)


@click.command("oracle")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--rewritten", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A rewritten copy of PATH: validate the pair four ways.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@compile_options
def oracle_command(path: Path, rewritten: Path | None, output_format: str, **kwargs) -> None:
    """Validate targets under PATH: eager vs compiled, and vs a rewritten tree if given."""
    from eqrewrite.rewriter.api import discover_files, find_project_root, load_config

    options = options_from(output_format=output_format, **kwargs)
    root = path if path.is_dir() else path.parent
    files = list(discover_files([path], ["*.py"], [], root))
    changed = {}
    if rewritten is not None:
        for file in files:
            relative = file.resolve().relative_to(root.resolve())
            other = rewritten / relative
            if other.is_file() and other.read_bytes() != file.read_bytes():
                changed[relative.as_posix()] = None
    config = load_config(find_project_root([path])).oracle
    sys.exit(validate(root, rewritten, files, changed, options, config))


def validate_rewrite(run, rollback: bool, flags: dict) -> int:
    """The rewrite command's ``--oracle`` step: validate ``run.paths[0]`` against the tree
    written to ``run.out_root`` (``run`` is the rewriter's ``RewriteRun``)."""
    from eqrewrite.rewriter.api import discover_files, find_project_root, load_config

    root, out_root = run.paths[0], run.out_root
    click.echo(f"validating {root} against the rewritten tree {out_root}", err=True)
    changed = {Path(r.path).resolve().relative_to(root.resolve()).as_posix(): r.edits
               for r in run.results if r.status == "changed"}
    undo = make_rollback(root, out_root, changed, run.rules, run.options) if rollback else None
    config = load_config(find_project_root([root])).oracle
    files = list(discover_files([root], ["*.py"], [], root))
    return validate(root, out_root, files, changed, options_from(output_format="text", **flags),
                    config, undo)


def validate(root: Path, rewritten: Path | None, files: list[Path],
             changed: dict[str, list[dict] | None], options: OracleOptions, config: dict,
             rollback=None) -> int:
    """Validate every target; print the report; return the exit code (1 if any fails).

    ``changed`` maps rewritten files (relative to ``root``) to their edit records
    (None when only the file is known). ``rollback`` is a callable
    ``(harness, target, report, coverage)`` returning the report after reverting
    culprit edits, or None.
    """
    from . import report as oracle_report
    from .compare import Options as CompareOptions
    from .harness import Harness, Options

    targets, problems = discover_targets(root, files)
    try:
        targets += factory_targets(config)
        settings = CompileSettings().merged({k: v for k, v in config.items() if k != "factory"})
        settings.merged(options.settings)  # validates the command-line settings early
    except TargetError as error:
        raise click.UsageError(str(error)) from None
    harness_options = Options(settings, options.settings,
                              CompareOptions(scale=options.tolerance_scale,
                                             strict=options.strict),
                              options.timeout, int(options.memory_gb * 1024**3),
                              options.count_breaks, options.reproducers)
    harness = Harness(root, rewritten, harness_options)
    coverage = tuple(str((root / f).resolve()) for f in changed)
    reports = []
    try:
        for target in targets:
            report = harness.validate(target, coverage)
            if rollback is not None and report.verdict == "rewrite-changed-behaviour":
                report = rollback(harness, target, report, coverage)
            reports.append(report)
    finally:
        harness.close()
    unvalidated = _unvalidated(root, changed, reports)
    for report in reports:
        report.seconds["worker_start"] = sum(w.start_seconds for w in harness.workers.values())
    if options.output_format == "json":
        click.echo(oracle_report.records(reports, unvalidated))
    else:
        click.echo(oracle_report.table(reports, unvalidated, problems))
    return 1 if any(r.verdict in FAILING for r in reports) else 0


def _unvalidated(root: Path, changed: dict[str, list[dict] | None], reports) -> list[str]:
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
            span = set(range(edit["start"]["line"], edit["end"]["line"] + 1))
            if not lines & span:
                missing.append(f"{file}:{edit['start']['line']}: {edit['rule']} "
                               f"({edit['before']} -> {edit['after']}) was not executed")
    return missing


def make_rollback(root: Path, rewritten: Path, changed: dict, rules, rewrite_options):
    """A ``rollback`` callable for ``validate`` that bisects over first-round edits."""
    from .rollback import EditSet, find_culprits

    edit_sets = {}

    def rollback(harness, target, report, coverage):
        if "edits" not in edit_sets:
            edit_sets["edits"] = EditSet(root, rewritten, list(changed), rules, rewrite_options)
        edit_set = edit_sets["edits"]
        candidates = edit_set.candidates(report.covered)
        files = {c.file for c in candidates}

        def is_good(excluded):
            edit_set.write(excluded, files)
            return harness.behaves_like_original(target, report)

        culprits = find_culprits(candidates, is_good)
        edit_set.write(set(culprits), files)
        reason = f"changed the behaviour of {target.name}: {report.detail}"
        reverted = [edit_set.describe(c, reason) for c in culprits]
        harness.workers["rewritten"].call({"op": "purge"})
        new_report = harness.validate(target, coverage)
        new_report.reverted = reverted
        new_report.detail = (f"reverted {len(reverted)} edit(s); " + new_report.detail).strip()
        return new_report

    return rollback
