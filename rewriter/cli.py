"""The ``eqrewrite`` command line: a thin layer over ``api.py``.

``eqrewrite PATH...`` rewrites (the default command: its options become one
``api.RewriteSettings``, given to ``api.rewrite``, whose ``RewriteReport`` it prints; the
options it shares with other commands are ``plugins.py``'s); ``eqrewrite rules ...``
inspects and tests rule packs. Exit codes follow black and ruff: 0 done or
nothing to do, 1 ``--check``/``--diff`` found changes, 2 usage, configuration or
rule-pack error, 123 some file could not be processed (the others still were),
130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import difflib
import sys
import textwrap
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__
from .matching.rules import Rule, RuleError, RulePack, load_pack, packaged_packs
from .options import (
    assumption_options,
    cache_options,
    dynamo_options,
    exclude_option,
    ignore_option,
    jobs_option,
    quiet_option,
    rules_option,
)
from .plugins import (
    Flags,
    Registry,
    RewriteRun,
    RewriteStep,
    load_plugins,
)
from .running.formatting import require_black
from .running.results import Mode, Status
from .workspace.config import Config, ConfigError, find_project_root, load_config
from .workspace.workers import Interrupted, interruptible

EXIT_USAGE = 2  # 1 (changes found) and 123 (a file error) are RewriteReport.status's


SUBCOMMAND_NAMES_RULE = (
    "A first argument named like a command (rules, oracle, audit, run, rewrite) is that command, "
    "even when a file or folder of that name exists: write such a path as ./NAME or NAME/, or "
    "run 'eqrewrite rewrite NAME'.")


class _DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, is a path to rewrite.

    A subcommand's name always means the subcommand: taking an existing path of that name
    instead would make ``eqrewrite oracle src/`` rewrite a folder called ``oracle`` in
    place. Installed plugins (``plugins.py``) are loaded before the first command is
    looked up. The group's help is the rewrite command's, plus the subcommands.
    """

    registry: Registry | None = None

    def plugins(self) -> Registry:
        """The registry, filled by every installed plugin on first use."""
        if self.registry is None:
            self.registry = Registry(self, self.commands["rewrite"])
            load_plugins(self.registry)
        return self.registry

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Subcommands find the registry in their context (``find_object``): the audit
        # command's module never imports this one.
        ctx.obj = self.plugins()
        if not args or (args[0] not in self.commands
                        and args[0] not in ("-h", "--help", "--version")):
            args = ["rewrite", *args]
        ctx.meta["eqrewrite.command"] = args[0]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            name = str(ctx.meta.get("eqrewrite.command", ""))
            if name == "rewrite" or name not in self.commands or not Path(name).exists():
                raise
            error.show()
            click.echo(f"note: '{name}' is the 'eqrewrite {name}' command; to rewrite the "
                       f"path {name}, write ./{name} or 'eqrewrite rewrite {name} ...'",
                       err=True)
            sys.exit(error.exit_code)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] PATH...")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix="   or: ")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The rewrite command's options (the default command), then the subcommands."""
        rewrite = self.commands["rewrite"]
        params = [p for p in rewrite.params + self.get_params(ctx)
                  if isinstance(p, click.Option)]
        records = [r for r in (p.get_help_record(ctx) for p in params) if r is not None]
        with formatter.section("Options"):
            formatter.write_dl(records)
        self.format_commands(ctx, formatter)
        with formatter.section("Paths and commands"):
            formatter.write_text(SUBCOMMAND_NAMES_RULE)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eqrewrite")
def main() -> None:
    """Rewrite the Python files under each PATH with YAML rule packs: in place by default,
    or report (--check, --diff, --format) or write a copy (--out) instead."""


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _load_packs(specs: list[str]) -> list[RulePack]:
    try:
        return [load_pack(spec) for spec in specs]
    except RuleError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"{error.filename}: cannot read the rule pack: {error.strerror or error}")


@main.command("rewrite")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@rules_option("Rule pack file or packaged pack name (default: default.yaml). Repeatable.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--diff", is_flag=True, help="Print unified diffs, write nothing; exit 1 on changes.")
@click.option("--out", "out_root", type=click.Path(file_okay=False, path_type=Path),
              help="Write the rewritten tree under this folder; sources stay untouched.")
@click.option("--unsafe", is_flag=True, default=None, help="Also run rules marked unsafe.")
@assumption_options(
    "Treat unannotated forward() parameters of nn.Modules as tensors.",
    "Take int/float/bool/complex parameter annotations as proof of a Python number "
    "(default: trust them).")
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
              help="Restrict every rule to this scope: everywhere, forward, compiled, traced "
                   "(what forward and compiled functions call, across the files), or "
                   "traced:FILE (the functions FILE lists, as recorded from a run). "
                   "Repeatable: the union.")
@ignore_option()
@exclude_option
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif"]),
              default="text", show_default=True,
              help="Report format on stdout; json and sarif print one document. Writing is "
                   "unchanged: add --check or --diff for a report only.")
@click.option("--black", "use_black", is_flag=True,
              help="Format changed files with black (pip install 'eqrewrite[black]').")
@cache_options("Where to keep the cache (default: .eqrewrite_cache in the project).")
@jobs_option("Worker processes (default: cores).")
@quiet_option("Print errors only.")
def rewrite_command(paths: tuple[Path, ...], rule_specs: tuple[str, ...], check: bool,
                    diff: bool, out_root: Path | None, unsafe: bool | None,
                    assume_tensor_params: bool | None,
                    trust_scalar_annotations: bool | None, scopes: tuple[str, ...],
                    ignored: tuple[str, ...], excludes: tuple[str, ...], output_format: str,
                    use_black: bool, no_cache: bool, cache_dir: Path | None, jobs: int | None,
                    quiet: bool, **plugin_flags: object) -> None:
    """Rewrite the Python files under PATHS with the selected rule packs (the default
    command: 'eqrewrite PATH...' runs it)."""
    from . import api  # imported when the command runs: ``eqrewrite --help`` stays quick
    from .running import report

    if not paths:
        _fail("no paths given; try 'eqrewrite src/ --diff' or 'eqrewrite --help'")
    if out_root is not None and (check or diff):
        _fail("--out writes a rewritten tree; it cannot be combined with --check or --diff")
    if use_black and (missing := require_black()) is not None:
        _fail(missing)
    steps, flags = main.plugins().steps, Flags(plugin_flags)
    mode = _mode(check, diff, out_root)
    for step in steps:
        out_root = step.prepare(flags, paths, mode, out_root)
    mode = _mode(check, diff, out_root)  # again: a step (--oracle) may have chosen --out
    settings = api.RewriteSettings(
        rules=rule_specs, mode=mode, out=out_root,
        unsafe=unsafe, assume_tensor_params=assume_tensor_params,
        trust_scalar_annotations=trust_scalar_annotations, scope=scopes, ignore=ignored,
        exclude=excludes, black=use_black, cache=not no_cache, cache_dir=cache_dir,
        jobs=jobs, progress=not quiet and mode is not Mode.CHECK and output_format == "text")
    try:
        with interruptible():
            done = api.rewrite(paths, settings)
    except api.USAGE_ERRORS as error:
        _fail(str(error))
    except Interrupted as stop:
        click.echo(f"eqrewrite: stopped by {stop}: every file is either rewritten or "
                   "untouched, none half-written", err=True)
        sys.exit(stop.exit_code)
    if not quiet:
        for folder in done.empty_folders:
            click.echo(f"no Python files found in {folder}", err=True)
    run_info = RewriteRun(paths, done.root, done.out, done.mode, list(done.rules),
                          done.options, list(done.results), output_format, done.options_for)
    if output_format == "text":
        report.print_text(list(done.results), mode, quiet=quiet)
        status, _ = _finish_steps(steps, flags, run_info)
    else:
        # stdout holds exactly one document, printed last; file errors still go to stderr.
        report.print_text(list(done.results), mode, quiet=True, diffs=False)
        status, records = _finish_steps(steps, flags, run_info)
        click.echo(done.to_json(records) if output_format == "json" else done.to_sarif())
    sys.exit(status or done.status)  # a step runs only when no file had an error (123)


def _mode(check: bool, diff: bool, out_root: Path | None) -> Mode:
    if diff:
        return Mode.DIFF
    if check:
        return Mode.CHECK
    return Mode.OUT if out_root else Mode.WRITE


def _config(root: Path) -> Config:
    try:
        return load_config(root)
    except ConfigError as error:
        _fail(str(error))


def _did_you_mean(name: str, known: set[str]) -> str:
    matches = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean {', '.join(matches)}?)" if matches else ""


def _finish_steps(steps: list[RewriteStep], flags: Flags,
                  run: RewriteRun) -> tuple[int, dict[str, dict[str, Any]]]:
    """Run the plugin steps after a rewrite without file errors: worst status, records."""
    if any(r.status is Status.ERROR for r in run.results):
        return 0, {}
    status = 0
    records: dict[str, dict[str, Any]] = {}
    for step in steps:
        outcome = step.finish(flags, run)
        if outcome is None:
            continue
        status = status or outcome.status
        if outcome.record is not None:
            records[step.name] = outcome.record
    return status, records


@main.group("rules")
def rules_group() -> None:
    """Inspect and test rule packs."""


_packs_option = rules_option(
    "Rule pack file or packaged name. Repeatable. Default: the packs pyproject.toml "
    "configures, else every packaged pack.")


def _selected_packs(rule_specs: tuple[str, ...]) -> list[RulePack]:
    """The packs named, else those the project here configures, else every packaged one."""
    if rule_specs:
        return _load_packs(list(rule_specs))
    config = _config(find_project_root([Path.cwd()]))
    if "rules" in config.given:
        return _load_packs(config.rules)
    return _load_packs(sorted(str(p) for p in packaged_packs().values()))


@rules_group.command("list")
@_packs_option
def rules_list(rule_specs: tuple[str, ...]) -> None:
    """List rules: id, safety, scope and description."""
    for pack in _selected_packs(rule_specs):
        click.echo(f"{pack.path}: {pack.description}")
        for rule in pack.rules:
            scope = ",".join(sorted(rule.scope))
            click.echo(f"  {rule.id:32} {rule.safety:6} {scope:11} {_first_line(rule)}")


def _first_line(rule: Rule) -> str:
    return rule.description.strip().splitlines()[0] if rule.description.strip() else ""


@rules_group.command("show")
@click.argument("rule_id")
@_packs_option
def rules_show(rule_id: str, rule_specs: tuple[str, ...]) -> None:
    """Show one rule in full, with its examples."""
    from .analysis.guards import GUARDS
    from .rulebook.docs import pattern_text

    for pack in _selected_packs(rule_specs):
        for rule in pack.rules:
            if rule.id != rule_id:
                continue
            click.echo(f"{rule.id}  ({rule.path}:{rule.line})")
            click.echo(f"  {rule.description.strip()}")
            if rule.implementation is None:
                click.echo(f"  pattern:  {pattern_text(rule).strip()}")
                click.echo(f"  rewrite:  {rule.rewrite}")
            else:
                options = ", ".join(f"{k}={v}" for k, v in rule.implementation.options.items())
                click.echo(f"  kind:     {rule.kind}" + (f" ({options})" if options else ""))
            for condition in rule.where:
                names = ", ".join("$" + n for n in condition.metavariables)
                click.echo(f"  where:    {condition.guard}({names}): "
                           f"{GUARDS[condition.guard][1]}")
            click.echo(f"  scope:    {', '.join(sorted(rule.scope))}   safety: {rule.safety}"
                       f"   context: {rule.context}")
            if rule.safety_note:
                click.echo(textwrap.fill(rule.safety_note, 100, subsequent_indent=" " * 12,
                                         initial_indent=f"  {rule.safety + ':':10}"))
            for example in rule.examples:
                label = "unchanged" if example.after is None else "before"
                click.echo(f"  {label}:\n" + _indented(example.before))
                if example.after is not None:
                    click.echo("  after:\n" + _indented(example.after))
            return
    known = {rule.id for pack in _selected_packs(rule_specs) for rule in pack.rules}
    _fail(f"no rule {rule_id!r} in the selected packs{_did_you_mean(rule_id, known)}; see "
          "'eqrewrite rules list'")


def _indented(text: str) -> str:
    return "".join("    " + line for line in text.rstrip("\n").splitlines(keepends=True))


@rules_group.command("test")
@_packs_option
def rules_test(rule_specs: tuple[str, ...]) -> None:
    """Run every rule's embedded examples; exit 1 if any fails or a pack has none."""
    from .rulebook.examples import check_pack, count_examples

    failed = False
    for pack in _selected_packs(rule_specs):
        total = count_examples(pack)
        failures = check_pack(pack)
        for failure in failures:
            click.echo(f"FAIL {failure.rule.path}:{failure.line}: {failure.rule.id}: "
                       f"{failure.message}")
        if total == 0:
            click.echo(f"FAIL {pack.path}: the pack has no examples")
        failed = failed or bool(failures) or total == 0
        click.echo(f"{pack.path}: {len(pack.rules)} rules, {total - len(failures)} passed, "
                   f"{len(failures)} failed")
    sys.exit(1 if failed else 0)


@rules_group.command("docs")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 with a diff if a generated file is out of date.")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The eqrewrite source checkout (default: the one the packs are loaded from).")
def rules_docs(check: bool, root: Path | None) -> None:
    """Generate the docs pages' rule tables, docs/rules.md and rules/schema.json from the packs."""
    from .rulebook.docs import DocsError, drift, generate
    from .workspace.files import write_atomic

    root = root or Path(str(next(iter(packaged_packs().values())))).parent.parent
    packs = _load_packs(sorted(str(p) for p in packaged_packs().values()))
    try:
        if check:
            stale = drift(root, packs)
            for item in stale:
                click.echo(item.diff, nl=False)
                click.echo(f"out of date: {item.path} (run 'eqrewrite rules docs')", err=True)
            sys.exit(1 if stale else 0)
        outdated = {item.path for item in drift(root, packs)}
        for relative, text in generate(root, packs).items():
            if relative in outdated:  # files already up to date keep their mtime
                write_atomic(root / relative, text.encode("utf-8"))
                click.echo(f"wrote {relative}", err=True)
    except DocsError as error:
        _fail(str(error))


def _add_audit() -> None:
    from .audit.cli import audit_command

    main.add_command(audit_command)


_add_audit()


@click.command("run", context_settings={"ignore_unknown_options": True,
                                        "allow_interspersed_args": False})
@click.option("-p", "--package", "packages", multiple=True, required=True, metavar="NAME",
              help="An installed package (or module) to rewrite as it is imported. Repeatable.")
@rules_option("Rule pack file or packaged pack name (default: graphbreaks). Repeatable.")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a JSON report of what was rewritten (module, file, rule, line), "
                   "modules missed and errors, when the program exits.")
@click.option("-m", "as_module", is_flag=True,
              help="The first argument is a module, run as 'python -m' runs it.")
@ignore_option()
@click.option("--unsafe", is_flag=True,
              help="Also run rules marked unsafe (e.g. moe-grouped-split): opt-in, as for "
                   "the rewrite command.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to keep rewritten modules and the call graph (default: the user "
                   "cache folder, $XDG_CACHE_HOME/eqrewrite or ~/.cache/eqrewrite).")
@jobs_option("Worker processes for a cold call graph (default: cores).")
@dynamo_options(
    "A torch._dynamo.config switch set before the program's code compiles "
    "(e.g. capture_scalar_outputs=true). Repeatable.",
    "Let Dynamo capture .item() values and data-dependent output shapes: "
    "capture_scalar_outputs=true and capture_dynamic_output_shape_ops=true "
    "(a --dynamo-config value for either wins).")
@click.argument("target", metavar="SCRIPT|MODULE")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(packages: tuple[str, ...], rule_specs: tuple[str, ...], report: Path | None,
                as_module: bool, ignored: tuple[str, ...], unsafe: bool,
                cache_dir: Path | None, jobs: int | None, dynamo: tuple[str, ...],
                dynamic_sizes: bool, target: str, args: tuple[str, ...]) -> None:
    """Run a Python script (or -m MODULE) with the named installed packages rewritten as
    they are imported, in memory: nothing is written into them. Exits with the program's
    status. Example: eqrewrite run --package transformers --dynamic-sizes train.py"""
    from .api import HookError, SwitchError, parse_switches, run_with_import_hook

    if not as_module and not Path(target).is_file():
        _fail(f"no such script {target!r} (use -m to run a module)")
    try:
        switches = parse_switches(dynamo, dynamic_sizes)
        status = run_with_import_hook(target, args, packages, rule_specs or ("graphbreaks",),
                                      module=as_module, report=report, cache_dir=cache_dir,
                                      jobs=jobs, ignore=ignored, dynamo_config=switches,
                                      unsafe=unsafe)
    except (HookError, SwitchError, RuleError) as error:
        _fail(str(error))
    sys.exit(status)


main.add_command(run_command)
