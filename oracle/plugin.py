"""The oracle's part of the command line, registered through the ``eqrewrite.plugins``
entry point: the ``eqrewrite oracle``, ``gen``, ``campaign``, ``reduce`` and ``report``
commands, the rewrite command's ``--oracle`` and ``--oracle-tests`` steps and the audit
command's dynamic options (``--run``, ``--what-if``, ``--bench``).

Importing this module must stay cheap (no torch): it runs on every ``eqrewrite`` call.
So ``eqrewrite gen``, whose package (the generator) imports torch, is registered as a
stand-in with its help that loads the command when it runs (``_Deferred``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from eqrewrite.rewriter.plugins import AuditRun, Flags, Registry, RewriteRun, StepResult

from .api import check_rewrite_paths
from .bugreport.cli import report_command
from .campaign.cli import campaign_command
from .cli import oracle_command
from .dynamicaudit.audit import DynamicAuditStep, audit_options
from .minimising.cli import reduce_command
from .options import compile_options, options_from_flags, usage_errors


class OracleStep:
    """``--oracle``: validate the rewritten tree four ways; ``--rollback``: revert culprits
    (what ``api.validated_rewrite`` does, the rewrite being the command's own)."""

    name = "oracle"

    def prepare(self, flags: Flags, paths: tuple[Path, ...], mode: str,
                out_root: Path | None) -> Path | None:
        if flags.flag("rollback") and not flags.flag("use_oracle") and not flags.text(
                "oracle_tests"):
            raise click.UsageError("--rollback needs --oracle or --oracle-tests")
        if not flags.flag("use_oracle"):
            return out_root
        with usage_errors():
            check_rewrite_paths(paths, mode)
        if out_root is not None:
            return out_root
        tree = Path(tempfile.mkdtemp(prefix="eqrewrite-rewritten-"))
        # Removed when the command ends, however it ends (exit 123 skips finish()).
        click.get_current_context().call_on_close(lambda: shutil.rmtree(tree, True))
        return tree

    def finish(self, flags: Flags, run: RewriteRun) -> StepResult | None:
        if not flags.flag("use_oracle"):
            return None
        from .cli import validate_rewrite

        embedded = "embedded" if run.output_format != "text" else "text"
        with usage_errors():
            options = options_from_flags(flags, embedded)
            status, record = validate_rewrite(run, options, flags.flag("rollback"))
        # The rewriter's step results hold plain dictionaries.
        return StepResult(status, dict(record) if run.output_format != "text" else None)


_TESTS_STATE = "eqrewrite.oracle_tests"  # the click context's meta key: prepare -> finish


class OracleTestsStep:
    """``--oracle-tests COMMAND``: the project's pytest suite run on the original and the
    rewritten tree (scratch copies), outcomes compared test by test (testsuite.py).

    A rewrite in place is made into a temporary tree first; the user's files are written
    only after the suite, and only when no test outcome stays changed (with ``--rollback``,
    the files blamed for a change keep their original text). ``--out`` trees get the
    rolled-back files' original text back; ``--check``/``--diff`` write nothing."""

    name = "oracle_tests"

    def prepare(self, flags: Flags, paths: tuple[Path, ...], mode: str,
                out_root: Path | None) -> Path | None:
        text = flags.text("oracle_tests")
        if text is None:
            return out_root
        from .harness.testsuite import SuiteError, check_coverage, parse_command

        try:
            command = parse_command(text)
            check_coverage(command)
        except SuiteError as error:
            raise click.UsageError(str(error)) from None
        context = click.get_current_context()
        deferred = mode == "write" and out_root is None
        context.meta[_TESTS_STATE] = (command, deferred)
        if not deferred:
            return out_root
        tree = Path(tempfile.mkdtemp(prefix="eqrewrite-rewritten-"))
        context.call_on_close(lambda: shutil.rmtree(tree, True))
        return tree

    def finish(self, flags: Flags, run: RewriteRun) -> StepResult | None:
        if flags.text("oracle_tests") is None:
            return None
        from .harness.testsuite import SuiteError, TestCommand, run_suite

        command, deferred = click.get_current_context().meta[_TESTS_STATE]
        assert isinstance(command, TestCommand)
        changed = _rewritten_files(run)

        def say(text: str) -> None:
            click.echo(text, err=True)

        skip = (run.out_root,) if run.out_root is not None and not deferred else ()
        try:
            report = run_suite(command, run.root, {f: data for f, (_, data) in changed.items()},
                               flags.flag("rollback"), skip, say)
        except SuiteError as error:
            click.echo(f"error: {error}", err=True)
            if deferred:
                click.echo("oracle-tests: nothing written", err=True)
            return StepResult(2, {"error": str(error)} if run.output_format != "text" else None)
        click.echo(report.text(), err=True)
        written, problems = _deliver(run, changed, set(report.files_rolled_back), deferred,
                                     bool(report.unresolved))
        for problem in problems:
            click.echo(f"error: {problem}", err=True)
        record = {**report.to_json(), "written": written}
        status = 1 if report.unresolved else (123 if problems else 0)
        return StepResult(status, record if run.output_format != "text" else None)


def _rewritten_files(run: RewriteRun) -> dict[str, tuple[Path, bytes]]:
    """``file relative to the project -> (source path, rewritten bytes)`` for each changed
    file: the bytes the run wrote to its tree, or (--check, --diff) the rewrite redone
    file by file, each under the options the run gave it (its traced functions decided
    over the whole run, as when written)."""
    from eqrewrite.rewriter.api import Status, decode, encode, rewrite_text

    found: dict[str, tuple[Path, bytes]] = {}
    root = run.root.resolve()
    for result in run.results:
        if result.status is not Status.CHANGED:
            continue
        source = Path(result.path)
        relative = source.resolve().relative_to(root).as_posix()
        if result.output is not None:
            found[relative] = source, Path(result.output).read_bytes()
            continue
        decoded = decode(source.read_bytes())
        rules = [rule for rule in run.rules if rule.could_match(decoded.text)]
        options = run.file_options(result.path) if run.file_options else run.options
        found[relative] = source, encode(decoded, rewrite_text(decoded.text, rules,
                                                               options).text)
    return found


def _deliver(run: RewriteRun, changed: dict[str, tuple[Path, bytes]], rolled_back: set[str],
             deferred: bool, unresolved: bool) -> tuple[list[str], list[str]]:
    """Write what the suite allows: in place (a deferred rewrite) every changed file not
    rolled back, unless some outcome is still changed; in a ``--out`` tree, the rolled-back
    files' original text. The files written in place, and the write errors."""
    from eqrewrite.rewriter.api import WriteError, write_checked

    written: list[str] = []
    problems: list[str] = []
    if not deferred:
        outputs = {Path(r.path).resolve(): r.output for r in run.results if r.output}
        for file in sorted(rolled_back):
            source, _ = changed[file]
            output = outputs.get(source.resolve())
            if output is not None:
                write_checked(Path(output), source.read_bytes(), shown=Path(output))
        return written, problems
    if unresolved:
        click.echo("oracle-tests: test outcomes changed: nothing written in place (--rollback "
                   "keeps the original text of the files the changed tests executed)", err=True)
        return written, problems
    for file, (source, data) in sorted(changed.items()):
        if file in rolled_back:
            continue
        try:
            write_checked(source, data, shown=source)
        except (WriteError, OSError) as error:
            problems.append(str(error))
            continue
        written.append(file)
    if written:
        click.echo(f"oracle-tests: wrote {len(written)} file(s) in place", err=True)
    return written, problems


class _Deferred(click.Command):
    """A command whose module is imported only when the command runs (or shows its own
    help): ``eqrewrite gen`` lives in the generator's package, which imports torch, and
    registering the plugin must not (a plain rewrite or audit never imports torch)."""

    def __init__(self, name: str, load: Callable[[], click.Command], help: str):
        super().__init__(name, help=help)  # the real command's: listed as it would be
        self._load = load

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        # The group then invokes the command of that context: the real one.
        return self._load().make_context(info_name, args, parent, **extra)


def _gen_command() -> click.Command:
    from .generate.cli import gen_command

    return gen_command


GEN_HELP = "Generate valid, self-contained PyTorch programs for compiler testing."


class UsageErrors:
    """An audit step whose ``OracleError`` (the API's usage errors: an unknown backend or
    switch, a bad ``[tool.eqrewrite.oracle]``) reaches click as a usage error (exit 2)."""

    def __init__(self, step: DynamicAuditStep):
        self.step = step
        self.name = step.name

    def prepare(self, flags: Flags) -> None:
        with usage_errors():
            self.step.prepare(flags)

    def finish(self, flags: Flags, run: AuditRun) -> StepResult | None:
        with usage_errors():
            return self.step.finish(flags, run)


def _rewrite_options() -> list[click.Parameter]:
    """``--oracle``, ``--oracle-tests``, ``--rollback`` and the compile options, as click
    parameters."""

    @click.command()
    @click.option("--oracle", "use_oracle", is_flag=True,
                  help="Validate the rewrite by running every target four ways (needs torch).")
    @click.option("--oracle-tests", "oracle_tests", metavar="COMMAND",
                  help="Validate the rewrite with the project's own tests: a pytest command "
                       "(e.g. \"pytest -q tests/\") run on copies of the original and the "
                       "rewritten project, outcomes compared test by test.")
    @click.option("--rollback", is_flag=True,
                  help="With --oracle: revert the edits that changed a target's behaviour; "
                       "with --oracle-tests: keep the original text of the files a changed "
                       "test executed.")
    @compile_options
    def holder(**_: Any) -> None:
        """Only collects the decorated parameters."""

    return list(holder.params)


def register(registry: Registry) -> None:
    """Entry point: add the ``oracle``, ``gen``, ``campaign``, ``reduce`` and ``report``
    commands, the rewrite options and the ``--oracle`` step, and the dynamic audit."""
    registry.add_command(oracle_command)
    registry.add_command(_Deferred("gen", _gen_command, GEN_HELP))
    registry.add_command(campaign_command)
    registry.add_command(reduce_command)
    registry.add_command(report_command)
    registry.add_rewrite_options(_rewrite_options())
    registry.add_rewrite_step(OracleStep())
    registry.add_rewrite_step(OracleTestsStep())
    registry.add_audit_options(audit_options())
    registry.add_audit_step(UsageErrors(DynamicAuditStep()))
