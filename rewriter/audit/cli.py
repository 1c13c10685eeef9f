"""``eqrewrite audit``: where code fragments torch.compile graphs, why, and what fixes it.

The static audit (this module and its package) never imports torch: fast enough for a
pre-commit hook. Installed plugins add the dynamic audit (``--run``, ``--what-if``,
``--bench``: the oracle) through ``Registry.add_audit_options``/``add_audit_step``; their
record becomes the report's ``dynamic`` section. Exit codes: 0 no findings (or
``--exit-zero``), 1 findings (with ``--baseline``: new findings) or a failed dynamic
step, 2 usage or configuration error, 123 some file could not be audited.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..matching.rules import RuleError, load_pack
from ..plugins import AuditRun, AuditStep, Registry
from ..running.cache import default_cache_dir
from ..workspace.config import Config, ConfigError, find_project_root, load_config
from .catalogue import PATTERNS
from .config import AuditConfig, audit_config, check_patterns

if TYPE_CHECKING:
    from ..rewriting.engine import RewriteOptions

EXIT_FINDINGS, EXIT_USAGE, EXIT_FILE_ERROR = 1, 2, 123
FORMATS = ("text", "md", "json", "sarif", "html")


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _list_patterns(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for pattern in PATTERNS.values():
        settings = ", ".join(s.name for s in pattern.settings) or "-"
        click.echo(f"{pattern.id:22} {', '.join(pattern.gb_ids):24} settings: {settings}")
        click.echo(f"{'':22} {pattern.title}")
    ctx.exit(0)


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("-r", "--rules", "rule_specs", multiple=True, metavar="PACK",
              help="Rule packs whose rules may fix the findings (default: graphbreaks); with "
                   "--run also measure the breaks before and after rewriting. Repeatable.")
@click.option("--scope", "scopes", multiple=True,
              type=click.Choice(["everywhere", "forward", "compiled", "traced"]),
              help="Where to look (default: forward of nn.Modules and compiled functions; "
                   "traced: also every function they call, across the audited files); "
                   "also restricts the rules, as for rewriting. Repeatable.")
@click.option("--assume-tensor-params", is_flag=True, default=None,
              help="Treat unannotated forward() parameters as tensors (as the rewriter).")
@click.option("--trust-scalar-annotations/--no-trust-scalar-annotations", default=None,
              help="Take int/float/bool/complex parameter annotations as proof of a Python "
                   "number, as rewriting does (default: the configuration's, else trust).")
@click.option("--ignore", "ignored", multiple=True, metavar="PATTERN",
              help="Do not report this pattern id (see --list-patterns). Repeatable.")
@click.option("--exclude", "excludes", multiple=True, metavar="GLOB",
              help="Skip paths matching this gitignore-style glob. Repeatable.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default=None,
              help="Report format (default: from the -o file's suffix, else text).")
@click.option("-o", "--output", "outputs", multiple=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of stdout; repeatable, each in the "
                   "format its suffix names (.txt .md .json .sarif .html).")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="A previous JSON report: report only findings it does not have, exit 1 "
                   "if there are any.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Worker processes (default: cores, as for rewriting).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to keep the cache (default: .eqrewrite_cache in the project, as "
                   "for rewriting).")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.option("--list-patterns", is_flag=True, expose_value=False, is_eager=True,
              callback=_list_patterns, help="List the break patterns and exit.")
def audit_command(paths: tuple[Path, ...], rule_specs: tuple[str, ...], scopes: tuple[str, ...],
                  assume_tensor_params: bool | None, trust_scalar_annotations: bool | None,
                  ignored: tuple[str, ...], excludes: tuple[str, ...], output_format: str | None,
                  outputs: tuple[Path, ...], baseline: Path | None, exit_zero: bool,
                  jobs: int | None, no_cache: bool, cache_dir: Path | None, quiet: bool,
                  **plugin_flags: Any) -> None:
    """Report where the code under PATHS breaks torch.compile graphs, why, and what fixes
    each break: a rule, a Dynamo setting, or a human."""
    if not paths:
        _fail("no paths given; try 'eqrewrite audit src/'")
    targets = _targets(outputs, output_format)
    registry = click.get_current_context().find_object(Registry)
    steps = registry.audit_steps if registry is not None else []
    for step in steps:
        step.prepare(plugin_flags)
    root = find_project_root(list(paths))
    config, audit = _configs(root)
    try:
        check_patterns(list(ignored), "--ignore")
    except ConfigError as error:
        _fail(str(error))
    packs = _packs(list(rule_specs) or audit.rules)
    started = time.perf_counter()
    cache_folder = None if no_cache else cache_dir or default_cache_dir(root)
    document, files, options = _static(paths, root, config, audit, packs, scopes,
                                       (assume_tensor_params, trust_scalar_annotations),
                                       ignored, excludes, (jobs, cache_folder))
    document["summary"]["seconds"] = round(time.perf_counter() - started, 3)
    status = _dynamic(steps, plugin_flags, AuditRun(
        paths, root, files, packs, bool(rule_specs), options, document,
        targets[0][1] if len(targets) == 1 else "json",
        progress=not quiet and (bool(outputs) or targets[0][1] == "text")))
    baseline = baseline or audit.baseline
    # Writing the report over the baseline regenerates it: compare with nothing then.
    if baseline is not None and not any(_same(path, baseline) for path, _ in targets if path):
        _compare_to(document, baseline, root)
    for path, chosen in targets:
        _emit(document, chosen, path, root, quiet)
    sys.exit(_exit_code(document, status, exit_zero))


def _configs(root: Path) -> tuple[Config, AuditConfig]:
    try:
        config = load_config(root)
        return config, audit_config(config)
    except ConfigError as error:
        _fail(str(error))


def _packs(specs: list[str]) -> list[str]:
    """Pack paths, each loaded once here so that a bad pack is a usage error."""
    try:
        return [str(load_pack(spec).path) for spec in specs]
    except RuleError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"{error.filename}: cannot read the rule pack: {error.strerror or error}")


def _static(paths: tuple[Path, ...], root: Path, config: Config, audit: AuditConfig,
            packs: list[str], scopes: tuple[str, ...],
            switches: tuple[bool | None, bool | None], ignored: tuple[str, ...],
            excludes: tuple[str, ...], running: tuple[int | None, Path | None]
            ) -> tuple[dict[str, Any], list[Path], RewriteOptions]:
    """Discover the files and audit them: (document, files, rewrite options).
    ``switches``: --assume-tensor-params and --trust-scalar-annotations (None: not given);
    ``running``: the worker count and the cache folder (None: no cache)."""
    from ..rewriting.engine import RewriteOptions
    from ..syntax.enums import Scope
    from ..workspace.discovery import discover, package_files
    from .document import build
    from .scan import ScanOptions, audit_files

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
    scan = ScanOptions(tuple(packs), scope, options.scope, assume,
                       frozenset(ignored) | frozenset(audit.ignore),
                       trust_scalar_annotations=trust)
    exclude = config.exclude + config.extend_exclude + audit.exclude + list(excludes)
    files = list(discover(list(paths), config.include, exclude, root))
    labelled = [(f, _label(f, root)) for f in files]
    # The traced scope follows calls through the whole packages holding the files.
    context = package_files(files, list(paths), config.include, exclude, root) if (
        "traced" in scope) else []
    started = time.perf_counter()
    audits = audit_files(labelled, scan, *running, context)
    settings = {"paths": [_label(p, root) for p in paths], "scope": sorted(scope),
                "rules": [Path(p).name for p in packs], "assume_tensor_params": assume,
                "trust_scalar_annotations": trust, "ignore": sorted(scan.ignore)}
    return build(audits, settings, time.perf_counter() - started), files, options


_SUFFIXES = {".txt": "text", ".md": "md", ".json": "json", ".sarif": "sarif", ".html": "html",
             ".htm": "html"}


def _targets(outputs: tuple[Path, ...], output_format: str | None
             ) -> list[tuple[Path | None, str]]:
    """(file or None for stdout, format) for every report to write."""
    if not outputs:
        return [(None, output_format or "text")]
    if output_format is not None:
        if len(outputs) > 1:
            _fail("--format names one format; with several -o files, each file's suffix "
                  "names its format")
        return [(outputs[0], output_format)]
    found: list[tuple[Path | None, str]] = []
    for path in outputs:
        if path.suffix.lower() not in _SUFFIXES:
            _fail(f"-o {path}: cannot tell the format from the suffix (use "
                  f"{', '.join(sorted(_SUFFIXES))}, or --format)")
        found.append((path, _SUFFIXES[path.suffix.lower()]))
    return found


def _same(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()


def _label(path: Path, root: Path) -> str:
    """``path`` relative to the project root, with '/' (ids and baselines depend on it)."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


def _dynamic(steps: list[AuditStep], flags: dict[str, Any], run: AuditRun) -> int:
    from .document import join_dynamic

    status = 0
    for step in steps:
        outcome = step.finish(flags, run)
        if outcome is None:
            continue
        status = status or outcome.status
        if outcome.record is not None:
            run.document["dynamic"] = outcome.record
            join_dynamic(run.document)
    return status


def _compare_to(document: dict[str, Any], path: Path, root: Path) -> None:
    from .document import BaselineError, apply_baseline, load_baseline

    try:
        apply_baseline(document, load_baseline(path), _label(path, root))
    except BaselineError as error:
        _fail(str(error))


def _emit(document: dict[str, Any], output_format: str, output: Path | None, root: Path,
          quiet: bool) -> None:
    from .formats import render

    text = render(document, output_format, root, color=output is None and sys.stdout.isatty())
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from ..workspace.files import write_atomic

    write_atomic(output, text.encode("utf-8"))  # a report is a user file too: never half written
    if not quiet:
        summary = document["summary"]
        click.echo(f"{summary['findings']} findings in {summary['files_with_findings']} files; "
                   f"report written to {output}", err=True)


def _exit_code(document: dict[str, Any], status: int, exit_zero: bool) -> int:
    if document["errors"]:
        return EXIT_FILE_ERROR
    if exit_zero:
        return 0
    return EXIT_FINDINGS if document["findings"] or status else 0
