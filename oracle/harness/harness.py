"""Four-way differential execution of one target, and the verdict that names the culprit.

For each target: original eager (twice: the determinism gate), original compiled, rewritten
eager, rewritten compiled. Original vs rewritten eager differing means the rewrite changed
behaviour; eager vs compiled differing for the same code is a candidate compiler bug, which
``judge.py`` may excuse as numerical noise (float64 reference, measured sensitivity).

One warm worker serves both trees (one start-up, shared Inductor caches: the rewritten
compile finds the original's kernels wherever the rewrite left the graph unchanged); a
``HarnessPool`` validates several targets at once, each with its own worker. Graph breaks
are counted during the compiled runs themselves, and a target that executes none of the
rewritten files is not run again in the rewritten tree: its code there is identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..judging import compare as cmp
from ..judging import judge
from ..judging.judge import Verdict, decide, differ
from ..judging.protocol import RunRequest, RunResult, Variant
from ..judging.settings import CompileSettings, Target
from .pool import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT, Worker

if TYPE_CHECKING:  # annotations only: graphbreaks loads Dynamo, rollback the rewriter
    from ..judging.graphbreaks import BreakReport
    from .rollback import Reverted

SEED = 0


@dataclass
class HarnessOptions:
    """How targets are validated."""

    settings: CompileSettings = field(default_factory=CompileSettings)
    overrides: dict[str, object] = field(default_factory=dict)  # command line; beats headers
    compare: cmp.CompareOptions = field(default_factory=cmp.CompareOptions)
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes of address space per worker
    count_breaks: bool = True
    separate_break_count: bool = False  # explain + fullgraph compile apart from the runs
    reproducer_dir: Path | None = None


@dataclass
class Finding:
    """One pair of runs that differ, and what that difference means."""

    verdict: Verdict
    left: str
    right: str
    differences: list[cmp.Difference]
    detail: str = ""
    evidence: judge.Evidence | None = None
    reproducer: str | None = None


@dataclass
class TargetReport:
    """Everything learned about one target."""

    target: str
    verdict: Verdict = Verdict.PASSED
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    breaks: dict[str, BreakReport] = field(default_factory=dict)  # per tree: "original", ...
    seconds: dict[str, float] = field(default_factory=dict)
    covered: dict[str, set[int]] = field(default_factory=dict)
    settings: CompileSettings | None = None
    reference: RunResult | None = field(default=None, repr=False)  # the original eager run
    reverted: list[Reverted] = field(default_factory=list)
    rewritten_reused: bool = False  # the target ran none of the rewritten code
    diagnostics: dict[str, list[str]] = field(default_factory=dict)  # the compiler's output

    def worst(self, verdict: Verdict, detail: str = "") -> None:
        """Keep the most severe verdict seen so far."""
        if verdict.rank < self.verdict.rank:
            self.verdict, self.detail = verdict, detail


class Harness:
    """Validates targets with one warm worker per tree."""

    def __init__(self, original: Path, rewritten: Path | None, options: HarnessOptions):
        for tree in (original, rewritten):
            if tree is not None and not tree.is_dir():
                raise FileNotFoundError(f"{tree}: no such folder to validate")
        self.original = original.resolve()
        self.rewritten = rewritten.resolve() if rewritten is not None else None
        self.options = options
        self.roots = {"original": self.original}
        if self.rewritten is not None:
            self.roots["rewritten"] = self.rewritten
        self.worker = Worker(self.roots, options.memory_limit,
                             warm_up=options.settings.backend == "inductor")
        self.worker.start()  # imports torch (and warms Inductor up) while targets are found

    def close(self) -> None:
        """Stop the worker."""
        self.worker.close()

    # -- requests -----------------------------------------------------------------------------

    def _run(self, report: TargetReport, label: str, tree: str, request: RunRequest) -> RunResult:
        """Run ``request`` on ``tree``; its timings and the compiler's output go to ``report``."""
        result: RunResult = self.worker.call(replace(request, tree=tree), self.options.timeout)
        for key, value in result.seconds.items():
            report.seconds[f"{label}.{key}"] = value
        if result.diagnostics:
            report.diagnostics[label] = result.diagnostics
        return result

    # -- validation ---------------------------------------------------------------------------

    def settings_for(self, target: Target) -> CompileSettings:
        """Configuration, then the target's header, then the command line."""
        return self.options.settings.merged(target.settings).merged(self.options.overrides)

    def validate(self, target: Target, coverage_files: tuple[str, ...] = ()) -> TargetReport:
        """Run the four-way comparison (two-way without a rewritten tree)."""
        settings = self.settings_for(target)
        report = TargetReport(target.name, settings=settings)
        base = RunRequest(target, settings, Variant.EAGER, SEED, deadline=self.options.timeout)
        first = self._run(report, "original_eager", "original",
                          replace(base, coverage=coverage_files))
        if _failed(report, first, "original eager", settings):
            return report
        report.covered, report.reference = first.covered, first
        base = replace(base, state=first.state, grad_inputs=first.grad_inputs)
        rewritten = self.rewritten is not None and (
            not coverage_files or any(first.covered.values()))
        report.rewritten_reused = self.rewritten is not None and not rewritten
        again = self._run(report, "original_eager_again", "original", base)
        if _failed(report, again, "original eager (second run)", settings):
            return report
        if differences := self._differ(first, again, settings):
            verdict, evidence = judge.nondeterminism(differences, first, again,
                                                     self._caller("original"), base)
            detail = "two eager runs of the original disagree: " + differences[0].message
            report.worst(verdict, detail if evidence is None else
                         f"{detail} ({evidence.summary()})")
            report.findings.append(Finding(verdict, "original eager", "original eager (again)",
                                           differences, evidence=evidence))
            if verdict is Verdict.NONDETERMINISTIC:
                return report
            # Undefined behaviour explains the disagreement (uninitialised memory): the runs
            # go on, and a bug in what it does not reach is still found.
        trees = {"original": first}
        if rewritten:
            rewritten_eager = self._run(report, "rewritten_eager", "rewritten", base)
            if _failed(report, rewritten_eager, "rewritten eager", settings):
                return report
            if differences := self._differ(first, rewritten_eager, settings):
                report.worst(Verdict.REWRITE_CHANGED_BEHAVIOUR, differences[0].message)
                report.findings.append(Finding(Verdict.REWRITE_CHANGED_BEHAVIOUR,
                                               "original eager", "rewritten eager", differences))
            trees["rewritten"] = rewritten_eager
        # The original first: the rewritten compile then finds its kernels in Inductor's cache
        # wherever the rewrite left the graph unchanged.
        compiled = {f"{tree}_compiled": self._run(report, f"{tree}_compiled", tree, replace(
            base, variant=Variant.COMPILED)) for tree in trees}
        for tree, eager_run in trees.items():
            self._judge_compiled(report, tree, base, eager_run, compiled[f"{tree}_compiled"])
        self._count_breaks(report, base, compiled, list(trees))
        return report

    def _count_breaks(self, report: TargetReport, base: RunRequest,
                      compiled: dict[str, RunResult], trees: list[str]) -> None:
        if not self.options.count_breaks:
            return
        for tree in trees:
            if self.options.separate_break_count:
                measured = self.worker.call(("breaks", tree, base.target, SEED, base.state),
                                            self.options.timeout)
                if not isinstance(measured, RunResult):
                    report.breaks[tree] = measured
            elif (counted := compiled[f"{tree}_compiled"].breaks) is not None:
                report.breaks[tree] = counted
        if report.rewritten_reused and "original" in report.breaks:
            report.breaks["rewritten"] = report.breaks["original"]

    def run_rewritten_eager(self, target: Target, report: TargetReport,
                            state: bytes | None) -> RunResult:
        """Run the rewritten target eagerly (every run imports the tree's files afresh, so
        files edited since the last run are read again)."""
        assert report.settings is not None  # set when the report was made (``validate``)
        request = RunRequest(target, report.settings, Variant.EAGER, SEED, state,
                             deadline=self.options.timeout)
        return self._run(report, "rewritten_eager", "rewritten", request)

    def behaves_like_original(self, target: Target, report: TargetReport) -> bool:
        """Re-run the (edited) rewritten tree eagerly; True when it matches the original."""
        # Only asked of a report whose original eager run succeeded (the reference).
        assert report.reference is not None and report.settings is not None
        rewritten = self.run_rewritten_eager(target, report, report.reference.state)
        return rewritten.failure is None and not self._differ(report.reference, rewritten,
                                                              report.settings)

    def _judge_compiled(self, report: TargetReport, tree: str, base: RunRequest,
                        eager: RunResult, compiled: RunResult) -> None:
        label = f"{tree} compiled"
        if compiled.failure is not None:
            report.worst(Verdict(compiled.failure.kind.value),
                         f"{label}: {compiled.failure.message}")
            return
        if compiled.exception and not eager.exception:
            message = compiled.exception.describe()
            triage = judge.excuse_crash(eager, compiled, self._caller(tree), base)
            if triage.excused is not None:
                verdict, evidence = triage.excused
                report.findings.append(Finding(verdict, f"{tree} eager", label, [],
                                               f"{message}; {evidence.summary()}", evidence))
                report.worst(verdict, f"{label} raised {message} ({evidence.summary()})")
                return
            report.worst(Verdict.COMPILE_ERROR, f"{label} raised where eager did not: {message}"
                         + (f" ({compiled.exception.frame})" if compiled.exception.frame else ""))
            crash = Finding(Verdict.COMPILE_ERROR, f"{tree} eager", label, [], message,
                            judge.Evidence("", undefined=triage.undefined)
                            if triage.undefined else None)
            if self.options.reproducer_dir is not None:  # to minimise it, as a bug's
                from .repro import write_reproducer

                crash.reproducer = str(write_reproducer(
                    self.options.reproducer_dir, self.roots[tree], base,
                    self.compare_options(base.settings), Verdict.COMPILE_ERROR.value))
            report.findings.append(crash)
            return
        differences = differ(eager, compiled, self.compare_options(base.settings), strides=True)
        if not differences:
            return
        verdict, evidence = self._triage(tree, base, eager, compiled, differences)
        finding = Finding(verdict, f"{tree} eager", label, differences, evidence.summary(),
                          evidence)
        if verdict is Verdict.COMPILER_BUG and self.options.reproducer_dir is not None:
            from .repro import write_reproducer

            finding.reproducer = str(write_reproducer(
                self.options.reproducer_dir, self.roots[tree], base,
                self.compare_options(base.settings)))
        report.findings.append(finding)
        report.worst(verdict, f"{label} differs from eager: {differences[0].message} "
                     f"({evidence.summary()})")

    def _triage(self, tree: str, base: RunRequest, eager: RunResult, compiled: RunResult,
                differences: list[cmp.Difference]) -> tuple[Verdict, judge.Evidence]:
        """Compiler bug, or rounding that the reference or the program's sensitivity explains?"""
        return decide(differences, eager, compiled, self._caller(tree), base,
                      self.compare_options(base.settings))

    def _caller(self, tree: str) -> Callable[[RunRequest], RunResult]:
        """Runs a triage request on ``tree`` in the worker."""
        timeout = self.options.timeout
        return lambda request: self.worker.call(replace(request, tree=tree), timeout)

    def compare_options(self, settings: CompileSettings) -> cmp.CompareOptions:
        """The comparison options with a target's ``strict`` and ``tolerance-scale``."""
        chosen = self.options.compare
        return replace(chosen, strict=chosen.strict or settings.strict,
                       scale=chosen.scale * settings.tolerance_scale)

    def _differ(self, left: RunResult, right: RunResult,
                settings: CompileSettings) -> list[cmp.Difference]:
        return differ(left, right, self.compare_options(settings))


# ``after`` of ``HarnessPool.validate_all``: (harness, target, report, coverage) -> the report
# to keep in its place.
Revalidate = Callable[[Harness, Target, TargetReport, tuple[str, ...]], TargetReport]


class HarnessPool:
    """Validates several targets at once, each job with its own warm worker.

    Compiling is mostly single-threaded Python (Dynamo, AOT autograd, Inductor's lowering)
    between bursts of parallel C++ builds, so one target at a time leaves cores idle; with
    ``jobs`` targets in flight they stay busy. Reports come back in the targets' order."""

    def __init__(self, original: Path, rewritten: Path | None, options: HarnessOptions,
                 jobs: int = 1):
        self.harnesses = [Harness(original, rewritten, options) for _ in range(max(1, jobs))]

    def validate_all(self, targets: list[Target], coverage: tuple[str, ...] = (),
                     done: Callable[[TargetReport], object] | None = None,
                     after: Revalidate | None = None) -> list[TargetReport]:
        """Validate ``targets``; ``after(harness, target, report, coverage)`` may replace a
        report (the rollback), ``done(report)`` is told of each finished one."""
        import queue
        from concurrent.futures import ThreadPoolExecutor

        free: queue.Queue[Harness] = queue.Queue()
        for harness in self.harnesses:
            free.put(harness)

        def one(target: Target) -> TargetReport:
            harness = free.get()
            try:
                report = harness.validate(target, coverage)
                if after is not None:
                    report = after(harness, target, report, coverage)
            finally:
                free.put(harness)
            if done is not None:
                done(report)
            return report

        with ThreadPoolExecutor(len(self.harnesses)) as executor:
            return list(executor.map(one, targets))

    @property
    def start_seconds(self) -> float:
        """Spawn plus torch import of every worker, summed."""
        return sum(h.worker.start_seconds for h in self.harnesses)

    def close(self) -> None:
        for harness in self.harnesses:
            harness.close()


def _failed(report: TargetReport, result: RunResult, label: str,
            settings: CompileSettings) -> bool:
    if result.failure is not None:
        report.worst(Verdict(result.failure.kind.value), f"{label}: {result.failure.message}")
        return True
    if label.startswith("original eager") and result.exception and not settings.raises:
        exception = result.exception
        out_of_memory = exception.type == "builtins.MemoryError" or (
            "can't allocate memory" in exception.message)
        where = f" at {exception.frame}" if exception.frame else ""
        report.worst(Verdict.OOM if out_of_memory else Verdict.ERROR,
                     f"{label} raised {exception.describe()}{where}")
        return True
    return False
