"""The ``eqrewrite`` command line.

``eqrewrite PATH...`` rewrites (the default command); ``eqrewrite rules ...``
inspects and tests rule packs. Exit codes follow black and ruff: 0 done or
nothing to do, 1 ``--check``/``--diff`` found changes, 2 usage, configuration or
rule-pack error, 123 some file could not be processed (the others still were).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .cache import Cache, default_cache_dir
from .config import ConfigError, find_project_root, load_config
from .discovery import discover
from .engine import Options, select_rules
from .plugins import Registry, RewriteRun, load_plugins
from .rules import RuleError, RulePack, load_pack, packaged_packs

EXIT_CHANGES, EXIT_USAGE, EXIT_FILE_ERROR = 1, 2, 123


class _DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, is a path to rewrite.

    Installed plugins (``plugins.py``) are loaded before the first command is looked up.
    """

    registry: Registry | None = None

    def plugins(self) -> Registry:
        """The registry, filled by every installed plugin on first use."""
        if self.registry is None:
            self.registry = Registry(self, self.commands["rewrite"])
            load_plugins(self.registry)
        return self.registry

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        self.plugins()
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "--version")):
            args = ["rewrite", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eqrewrite")
def main() -> None:
    """Rewrite PyTorch code with YAML rule packs: ``eqrewrite PATH... [OPTIONS]``."""


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _load_packs(specs: list[str]) -> list[RulePack]:
    try:
        return [load_pack(spec) for spec in specs]
    except RuleError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"cannot read rule pack: {error}")


@main.command("rewrite")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("-r", "--rules", "rule_specs", multiple=True, metavar="PACK",
              help="Rule pack file or packaged pack name (default: default.yaml). Repeatable.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--diff", is_flag=True, help="Print unified diffs, write nothing; exit 1 on changes.")
@click.option("--out", "out_root", type=click.Path(file_okay=False, path_type=Path),
              help="Write the rewritten tree under this folder; sources stay untouched.")
@click.option("--unsafe", is_flag=True, default=None, help="Also run rules marked unsafe.")
@click.option("--assume-tensor-params", is_flag=True, default=None,
              help="Treat unannotated forward() parameters of nn.Modules as tensors.")
@click.option("--trust-scalar-annotations/--no-trust-scalar-annotations", default=None,
              help="Take int/float/bool/complex parameter annotations as proof of a Python "
                   "number (default: trust them).")
@click.option("--scope", "scopes", multiple=True,
              type=click.Choice(["everywhere", "forward", "compiled"]),
              help="Restrict every rule to this scope. Repeatable.")
@click.option("--ignore", "ignored", multiple=True, metavar="RULE_ID",
              help="Disable a rule by id. Repeatable.")
@click.option("--exclude", "excludes", multiple=True, metavar="GLOB",
              help="Skip paths matching this gitignore-style glob. Repeatable.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif"]),
              default="text", show_default=True, help="Report format on stdout.")
@click.option("--black", "use_black", is_flag=True, help="Format changed files with black.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to keep the cache (default: .eqrewrite_cache in the project).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: cores).")
@click.option("-q", "--quiet", is_flag=True, help="Print errors only.")
def rewrite_command(paths: tuple[Path, ...], rule_specs: tuple[str, ...], check: bool,
                    diff: bool, out_root: Path | None, unsafe: bool | None,
                    assume_tensor_params: bool | None,
                    trust_scalar_annotations: bool | None, scopes: tuple[str, ...],
                    ignored: tuple[str, ...], excludes: tuple[str, ...], output_format: str,
                    use_black: bool, no_cache: bool, cache_dir: Path | None, jobs: int | None,
                    quiet: bool, **plugin_flags) -> None:
    """Rewrite the Python files under PATHS with the selected rule packs."""
    from . import report
    from .runner import Job, run

    if not paths:
        _fail("no paths given; try 'eqrewrite src/ --diff' or 'eqrewrite --help'")
    if out_root is not None and (check or diff):
        _fail("--out writes a rewritten tree; it cannot be combined with --check or --diff")
    steps = main.plugins().steps
    mode = "diff" if diff else "check" if check else "out" if out_root else "write"
    for step in steps:
        out_root = step.prepare(plugin_flags, paths, mode, out_root)
    root = find_project_root(list(paths))
    try:
        config = load_config(root)
    except ConfigError as error:
        _fail(str(error))
    packs = _load_packs(list(rule_specs) or config.rules)
    options = Options(
        unsafe=config.unsafe if unsafe is None else unsafe,
        assume_tensor_params=(config.assume_tensor_params if assume_tensor_params is None
                              else assume_tensor_params),
        scope=frozenset(scopes or config.scope or ()) or None,
        trust_scalar_annotations=(config.trust_scalar_annotations
                                  if trust_scalar_annotations is None
                                  else trust_scalar_annotations),
    )
    # Again: a step (--oracle) may have chosen an --out folder.
    mode = "diff" if diff else "check" if check else "out" if out_root else "write"
    job = Job([p.path for p in packs], options, mode, out_root, use_black,
              tuple(ignored) + tuple(config.ignore))
    files = list(discover(list(paths), config.include,
                          config.exclude + config.extend_exclude + list(excludes), root))
    pairs = [(f, _destination(f, paths, out_root)) for f in files]
    cache = None
    if not no_cache and not use_black:
        key = [p.digest for p in packs] + [repr(options), repr(job.ignore)]
        cache = Cache(cache_dir or default_cache_dir(root), key)
    results = run(pairs, job, cache, jobs, progress=not quiet and mode != "check"
                  and output_format == "text")
    if output_format == "json":
        click.echo(report.to_json(results, mode))
    elif output_format == "sarif":
        click.echo(report.to_sarif(results, [r for p in packs for r in p.rules]))
    report.print_text(results, mode, quiet=quiet or output_format != "text")
    if any(r.status == "error" for r in results):
        sys.exit(EXIT_FILE_ERROR)
    run_info = RewriteRun(paths, root, out_root, mode, select_rules(
        [r for p in packs for r in p.rules if r.id not in job.ignore], options), options,
        results)
    for step in steps:
        status = step.finish(plugin_flags, run_info)
        if status is not None:
            sys.exit(status)
    if mode in ("check", "diff") and any(r.status == "changed" for r in results):
        sys.exit(EXIT_CHANGES)


def _destination(path: Path, roots: tuple[Path, ...], out_root: Path | None) -> Path | None:
    if out_root is None:
        return None
    for root in roots:
        if root.is_dir() and (root == path or root in path.parents):
            return out_root / path.relative_to(root)
    return out_root / path.name


@main.group("rules")
def rules_group() -> None:
    """Inspect and test rule packs."""


_packs_option = click.option(
    "-r", "--rules", "rule_specs", multiple=True, metavar="PACK",
    help="Rule pack file or packaged name. Repeatable. Default: every packaged pack.")


def _selected_packs(rule_specs: tuple[str, ...]) -> list[RulePack]:
    return _load_packs(list(rule_specs) or sorted(str(p) for p in packaged_packs().values()))


@rules_group.command("list")
@_packs_option
def rules_list(rule_specs: tuple[str, ...]) -> None:
    """List rules: id, safety, scope and description."""
    for pack in _selected_packs(rule_specs):
        click.echo(f"{pack.path}: {pack.description}")
        for rule in pack.rules:
            scope = ",".join(sorted(rule.scope))
            click.echo(f"  {rule.id:32} {rule.safety:6} {scope:11} {_first_line(rule)}")


def _first_line(rule) -> str:
    return rule.description.strip().splitlines()[0] if rule.description.strip() else ""


@rules_group.command("show")
@click.argument("rule_id")
@_packs_option
def rules_show(rule_id: str, rule_specs: tuple[str, ...]) -> None:
    """Show one rule in full, with its examples."""
    from .guards import GUARDS

    for pack in _selected_packs(rule_specs):
        for rule in pack.rules:
            if rule.id != rule_id:
                continue
            click.echo(f"{rule.id}  ({rule.path}:{rule.line})")
            click.echo(f"  {rule.description.strip()}")
            if rule.implementation is None:
                click.echo(f"  pattern:  {rule.pattern.text.strip()}")
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
            for example in rule.examples:
                label = "unchanged" if example.after is None else "before"
                click.echo(f"  {label}:\n" + _indented(example.before))
                if example.after is not None:
                    click.echo("  after:\n" + _indented(example.after))
            return
    _fail(f"no rule {rule_id!r} in the selected packs; see 'eqrewrite rules list'")


def _indented(text: str) -> str:
    return "".join("    " + line for line in text.rstrip("\n").splitlines(keepends=True))


@rules_group.command("test")
@_packs_option
def rules_test(rule_specs: tuple[str, ...]) -> None:
    """Run every rule's embedded examples; exit 1 if any fails or a pack has none."""
    from .examples import check_pack, count_examples

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
