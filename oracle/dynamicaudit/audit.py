"""The dynamic graph-break audit: ``eqrewrite audit --run [--rules P] [--what-if] [--bench]``.

The static audit (the rewriter's, torch-free) says where code is likely to break graphs;
this runs the oracle's targets and says where it does. For each target, in warm worker
processes (``probe.py``): graphs, breaks with torch's registry id, explanation and hints,
the innermost user frame, skipped frames, recompilations over the target's input sets,
compile time, whether ``fullgraph=True`` compiles, and whether compiled outputs equal eager
ones by the oracle's comparison. Breaks are deduplicated across targets by (GB id, site).

With ``--rules``, the tree is also rewritten into a temporary folder and every target
measured again there: breaks, graphs and fullgraph before and after, and outputs of the
rewritten code (eager and compiled) against the original eager ones; ``--bench`` adds the
compiled latency ratio. With ``--what-if``, every target that still breaks (after the
rules, if given) runs again with each Dynamo switch that may remove one of its breaks:
which breaks each removes, and whether values and printed output stay equal. With
``--dynamo-config``/``--dynamic-sizes`` (``AuditRun.dynamo_config``), every target is also
measured with those switches set, on each tree: breaks in every cell (original/rewritten x
default/switches), which of the rules and the switches removes each break site, and whether
the rewrite stays exact under both modes.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click
from eqrewrite.rewriter.api import WHAT_IF_SWITCHES, DynamoSwitches, SwitchError
from eqrewrite.rewriter.plugins import AuditRun, Flags, StepResult

from ..judging.settings import CompileSettings, Target, TargetError

if TYPE_CHECKING:  # imported when the audit runs, not when its options are registered
    from rich.progress import Progress, TaskID

    from ..harness.pool import Worker
    from .auditrecord import DynamicRecord, Opcode
    from .probe import ProbeRequest, ProbeResult

SEED = 0
BENCH_CALLS = 20
AUDIT_BACKEND = "eager"  # breaks are Dynamo's: no code generation needed to count them


class DynamicAuditStep:
    """``--run``, ``--what-if`` and ``--bench`` of the audit command."""

    name = "dynamic"

    def prepare(self, flags: Flags) -> None:
        if (flags.flag("what_if") or flags.flag("bench")) and not flags.flag("run"):
            raise click.UsageError("--what-if and --bench need --run (they run the targets)")

    def finish(self, flags: Flags, run: AuditRun) -> StepResult | None:
        if not flags.flag("run"):
            return None
        record, status = DynamicAudit(run, flags).run()
        return StepResult(status, dict(record))  # the rewriter's step results: plain dicts


def audit_options() -> list[click.Parameter]:
    """The audit command's dynamic options, as click parameters."""

    @click.command()
    @click.option("--run", "run", is_flag=True,
                  help="Run the targets (needs torch) and count the real breaks.")
    @click.option("--what-if", "what_if", is_flag=True,
                  help="With --run: try each relevant Dynamo switch on targets that still "
                       "break.")
    @click.option("--bench", is_flag=True,
                  help="With --run and --rules: also time compiled calls before and after.")
    @click.option("--backend", "audit_backend", default=AUDIT_BACKEND, show_default=True,
                  help="torch.compile backend for --run (eager: Dynamo only).")
    @click.option("--timeout", "audit_timeout", type=float, default=300.0, show_default=True,
                  help="Seconds per target run.")
    @click.option("--parallel", "audit_parallel", type=click.IntRange(min=1),
                  default=min(2, os.cpu_count() or 1), show_default=True,
                  help="Targets run at once, each with its own worker.")
    def holder(**_: Any) -> None:
        """Only collects the decorated parameters."""

    return list(holder.params)


class DynamicAudit:
    """One dynamic audit: targets, trees, workers, and the record for the report."""

    def __init__(self, run: AuditRun, flags: Flags):
        self.audit = run
        self.flags: dict[str, Any] = dict(flags)  # as auditrecord.AuditView reads them
        self.tree = _tree_root(run.paths, run.root)
        self.copy: Path | None = None  # the rewritten tree, while it exists
        self.line_maps: dict[str, Sequence[Opcode]] = {}  # rewritten file -> to the original
        self.timeout = flags.number("audit_timeout", 300.0) or 300.0
        # --dynamo-config/--dynamic-sizes: the second mode every target is measured in
        self.switches: dict[str, object] = dict(run.dynamo_config)

    def run(self) -> tuple[DynamicRecord, int]:
        from eqrewrite.rewriter.api import load_config

        from ..api import check_switches, configured
        from ..harness.targets import discover_targets, factory_targets

        config = load_config(self.audit.root).oracle
        from_config, run_config = configured(config)
        files = [f for f in self.audit.files if self.tree in f.resolve().parents]
        targets, problems = discover_targets(self.tree, files)
        try:
            targets += factory_targets(run_config.get("factory", []))
            settings = CompileSettings().merged(from_config).merged(
                {"backend": self.flags.get("audit_backend") or AUDIT_BACKEND})
            check_switches(settings, self.tree)
            _check_dynamo(self.switches)
        except (TargetError, SwitchError) as error:
            raise click.UsageError(str(error)) from None
        from .auditrecord import record

        with ExitStack() as stack:
            self.copy = self._rewrite(stack) if self.audit.rules_given else None
            measured = self._measure_all(targets, settings, self.copy)
            # Inside: the rewritten tree's source lines are read for the report.
            document = record(self, targets, measured, problems, settings,
                              self.copy is not None)
        # A target the audit could not measure (crash, timeout, out of memory) fails the run.
        probes = [p for m in measured for p in [m.get("original"), m.get("rewritten"),
                                                   *m.get("switched", {}).values()] if p]
        failed = any(p.failure is not None for p in probes)
        return document, 1 if failed else 0

    # -- trees ----------------------------------------------------------------------------

    def _rewrite(self, stack: ExitStack) -> Path:
        """The tree rewritten with the selected packs, in a temporary folder."""
        from eqrewrite.rewriter.api import (
            FUNCTION_SCOPES,
            RewriteError,
            SourceError,
            decode,
            encode,
            function_scopes,
            load_packs,
            rewrite_text,
            select_rules,
            write_atomic,
        )

        folder = Path(tempfile.mkdtemp(prefix="eqrewrite-audit-"))
        stack.callback(shutil.rmtree, folder, True)
        copy = folder / self.tree.name
        shutil.copytree(self.tree, copy, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".git", ".eqrewrite_cache"))
        rules = select_rules([r for p in load_packs(self.audit.packs) for r in p.rules],
                             self.audit.options)
        # As the rewrite command: a call in one file can put a function of another in the
        # rules' ``traced`` scope, so the scopes are computed over all the files first.
        needed = {name for r in rules for name in r.scope if name in FUNCTION_SCOPES}
        scopes = function_scopes([str(f) for f in self.audit.files], needed,
                                 self.audit.options.profiles) if needed else {}
        for file in self.audit.files:
            if self.tree not in file.resolve().parents:
                continue
            target = copy / file.resolve().relative_to(self.tree)
            try:
                source = decode(file.read_bytes())
                candidates = [r for r in rules if r.could_match(source.text)]
                if not candidates:
                    continue
                options = replace(self.audit.options, function_scopes={
                    name: by_path.get(str(file), frozenset()) for name, by_path in scopes.items()})
                rewritten = rewrite_text(source.text, candidates, options)
            except (OSError, SourceError, RewriteError):
                continue  # the static report lists the file's error; the copy stays as it was
            if rewritten.changed:
                write_atomic(target, encode(source, rewritten.text))
                self.line_maps[str(target)] = difflib.SequenceMatcher(
                    None, source.text.splitlines(), rewritten.text.splitlines(),
                    autojunk=False).get_opcodes()
        return copy

    # -- measurements -----------------------------------------------------------------------

    def _measure_all(self, targets: list[Target], settings: CompileSettings,
                     rewritten: Path | None) -> list[dict[str, Any]]:
        from ..harness.pool import Worker

        jobs = max(1, min(int(self.flags.get("audit_parallel") or 1), len(targets)))
        roots = {"original": self.tree}
        if rewritten is not None:
            roots["rewritten"] = rewritten
        workers = [Worker(roots) for _ in range(jobs)]  # each serves both trees
        for worker in workers:
            worker.start()
        free = list(workers)
        progress = _Progress(len(targets), self.audit.progress)

        def one(target: Target) -> dict[str, Any]:
            worker = free.pop()
            try:
                return self._measure(target, settings, worker, list(roots))
            finally:
                free.append(worker)
                progress.advance(target.name)

        try:
            with progress, ThreadPoolExecutor(jobs) as executor:
                return list(executor.map(one, targets))
        finally:
            for worker in workers:
                worker.close()

    def _probe(self, worker: Worker, request: ProbeRequest) -> ProbeResult:
        from ..judging.protocol import RunResult
        from .probe import ProbeResult

        # A probe is several runs (eager, compiled, input sets, fullgraph, timing).
        answer: ProbeResult | RunResult = worker.call(request, self.timeout * 6)
        if isinstance(answer, RunResult):  # the worker crashed, hung or refused
            return ProbeResult(failure=answer.failure)
        return answer

    def _measure(self, target: Target, settings: CompileSettings, worker: Worker,
                 trees: list[str]) -> dict[str, Any]:
        from .probe import ProbeRequest

        settings = settings.merged(target.settings).merged(
            {"backend": self.flags.get("audit_backend") or AUDIT_BACKEND})
        bench = BENCH_CALLS if self.flags.get("bench") else 0
        request = ProbeRequest(target, settings, SEED, bench=bench, deadline=self.timeout * 5)
        found: dict[str, Any] = {"target": target, "settings": settings,
                                 "original": self._probe(worker, request)}
        state = _state(found["original"])
        if "rewritten" in trees:
            found["rewritten"] = self._probe(worker, ProbeRequest(
                target, settings, SEED, state, bench=bench, deadline=self.timeout * 5,
                tree="rewritten"))
        if self.switches:
            switched = settings.merged({f"dynamo.{k}": v for k, v in self.switches.items()})
            found["switched_settings"] = switched
            found["switched"] = {tree: self._probe(worker, ProbeRequest(
                target, switched, SEED, state, deadline=self.timeout * 5, tree=tree))
                for tree in trees}
        if self.flags.get("what_if"):
            tree = "rewritten" if "rewritten" in trees else "original"
            found["what_if"] = self._what_if(target, settings, state, worker, found[tree],
                                             tree)
            found["what_if_tree"] = tree
        return found

    def _what_if(self, target: Target, settings: CompileSettings, state: bytes | None,
                 worker: Worker, base: ProbeResult,
                 tree: str) -> list[tuple[str, str, ProbeResult]]:
        """(switch, value, probe) for each switch that may remove one of ``base``'s breaks."""
        from .probe import ProbeRequest

        report = base.compiled.breaks if base.compiled is not None else None
        if report is None or not report.breaks:
            return []
        ids = {r.gb_id for r in report.reasons}
        runs = []
        for switch, removes in WHAT_IF_SWITCHES.items():
            if removes and not ids & set(removes):
                continue
            value = _SWITCH_VALUES.get(switch, "true")
            request = ProbeRequest(target, settings, SEED, state, switch=(switch, value),
                                   eager=False, measure=False, deadline=self.timeout * 2,
                                   tree=tree)
            runs.append((switch, value, self._probe(worker, request)))
        return runs


def _check_dynamo(switches: dict[str, object]) -> None:
    """Refuse a switch Dynamo does not have (with its close matches) or a boolean switch
    given another value, as ``eqrewrite run`` does (``SwitchError``)."""
    if switches:
        import torch._dynamo.config

        DynamoSwitches(switches).check(torch._dynamo.config)


_SWITCH_VALUES = {"ignore_logger_methods": "Logger methods",
                  "reorderable_logging_functions": "print, warnings.warn"}


def _state(probe: ProbeResult) -> bytes | None:
    return probe.eager.state if probe.eager is not None else None


def _tree_root(paths: tuple[Path, ...], root: Path) -> Path:
    """The folder whose files the workers import: the one folder given, a file's folder,
    or the project root for several paths."""
    if len(paths) == 1:
        path = paths[0].resolve()
        return path if path.is_dir() else path.parent
    return root.resolve()


class _Progress:
    """A rich progress bar on stderr while targets run (only on a terminal)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled and total > 0 and sys.stderr.isatty()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = bar = Progress(transient=True, console=Console(stderr=True))
            bar.__enter__()
            self._task = bar.add_task("running targets", total=self.total)
        return self

    def advance(self, name: str) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, description=name)

    def __exit__(self, exc_type: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, error, trace)
