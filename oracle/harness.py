"""Four-way differential execution of one target, and the verdict that names the culprit.

For each target: original eager (twice: the determinism gate), original compiled, rewritten
eager, rewritten compiled. Original vs rewritten eager differing means the rewrite changed
behaviour; eager vs compiled differing for the same code is a candidate compiler bug, which
``judge.py`` may excuse as numerical noise (float64 reference, measured sensitivity).

The two trees' workers run side by side (one request each at a time), graph breaks are
counted during the compiled runs themselves, and a target that executes none of the
rewritten files is not run again in the rewritten tree: its code there is identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from . import compare as cmp
from . import judge
from .judge import Verdict, decide, differ
from .pool import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT, Worker
from .protocol import RunRequest, RunResult, Variant
from .settings import CompileSettings, Target

SEED = 0


@dataclass
class Options:
    """How targets are validated."""

    settings: CompileSettings = field(default_factory=CompileSettings)
    overrides: dict[str, object] = field(default_factory=dict)  # command line; beats headers
    compare: cmp.Options = field(default_factory=cmp.Options)
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes of address space per worker
    count_breaks: bool = True
    separate_break_count: bool = False  # explain + fullgraph compile apart from the runs
    concurrent: bool = True             # the two trees' workers at the same time
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
    breaks: dict[str, object] = field(default_factory=dict)  # "original"/"rewritten" → report
    seconds: dict[str, float] = field(default_factory=dict)
    covered: dict[str, set[int]] = field(default_factory=dict)
    settings: CompileSettings | None = None
    reference: RunResult | None = field(default=None, repr=False)  # the original eager run
    reverted: list = field(default_factory=list)
    rewritten_reused: bool = False  # the target ran none of the rewritten code
    diagnostics: dict[str, list[str]] = field(default_factory=dict)  # the compiler's output

    def worst(self, verdict: Verdict, detail: str = "") -> None:
        """Keep the most severe verdict seen so far."""
        if verdict.rank < self.verdict.rank:
            self.verdict, self.detail = verdict, detail


class Harness:
    """Validates targets with one warm worker per tree."""

    def __init__(self, original: Path, rewritten: Path | None, options: Options):
        for tree in (original, rewritten):
            if tree is not None and not tree.is_dir():
                raise FileNotFoundError(f"{tree}: no such folder to validate")
        self.original = original.resolve()
        self.rewritten = rewritten.resolve() if rewritten is not None else None
        self.options = options
        self.workers = {"original": Worker(self.original, options.memory_limit)}
        if self.rewritten is not None:
            self.workers["rewritten"] = Worker(self.rewritten, options.memory_limit)
        for handle in self.workers.values():
            handle.start()  # both import torch at the same time

    def close(self) -> None:
        """Stop the workers (all asked first, then waited for)."""
        for handle in self.workers.values():
            handle.stop()
        for handle in self.workers.values():
            handle.close()

    # -- requests -----------------------------------------------------------------------------

    def _run(self, report: TargetReport, label: str, tree: str, request: RunRequest) -> RunResult:
        return self._runs(report, {label: (tree, request)})[label]

    def _runs(self, report: TargetReport,
              requests: dict[str, tuple[str, RunRequest]]) -> dict[str, RunResult]:
        """Run requests on their trees' workers, side by side when ``concurrent``."""
        timeout = self.options.timeout
        results: dict[str, RunResult] = {}
        if self.options.concurrent:
            sent = {label: self.workers[tree].submit(request, timeout)
                    for label, (tree, request) in requests.items()}
            for label, (tree, _) in requests.items():
                failure = sent[label]
                results[label] = (RunResult(failure=failure) if failure is not None
                                  else self.workers[tree].receive(timeout))
        else:
            for label, (tree, request) in requests.items():
                results[label] = self.workers[tree].call(request, timeout)
        for label, result in results.items():
            for key, value in result.seconds.items():
                report.seconds[f"{label}.{key}"] = value
            if result.diagnostics:
                report.diagnostics[label] = result.diagnostics
        return results

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
        base = replace(base, state=first.state)
        rewritten = self.rewritten is not None and (
            not coverage_files or any(first.covered.values()))
        report.rewritten_reused = self.rewritten is not None and not rewritten
        pair = {"original_eager_again": ("original", base)}
        if rewritten:
            pair["rewritten_eager"] = ("rewritten", base)
        eager = self._runs(report, pair)
        if _failed(report, eager["original_eager_again"], "original eager (second run)",
                   settings):
            return report
        if differences := self._differ(first, eager["original_eager_again"], settings):
            report.worst(Verdict.NONDETERMINISTIC, "two eager runs of the original disagree: "
                         + differences[0].message)
            report.findings.append(Finding(Verdict.NONDETERMINISTIC, "original eager",
                                           "original eager (again)", differences))
            return report
        trees = {"original": first}
        if rewritten:
            rewritten_eager = eager["rewritten_eager"]
            if _failed(report, rewritten_eager, "rewritten eager", settings):
                return report
            if differences := self._differ(first, rewritten_eager, settings):
                report.worst(Verdict.REWRITE_CHANGED_BEHAVIOUR, differences[0].message)
                report.findings.append(Finding(Verdict.REWRITE_CHANGED_BEHAVIOUR,
                                               "original eager", "rewritten eager", differences))
            trees["rewritten"] = rewritten_eager
        # One tree after the other: the rewritten compile then finds the original's kernels
        # in Inductor's cache wherever the rewrite left the graph unchanged, which beats two
        # full compiles side by side on a small machine.
        compiled = {}
        for tree in trees:
            compiled.update(self._runs(report, {f"{tree}_compiled": (tree, replace(
                base, variant=Variant.COMPILED))}))
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
                measured = self.workers[tree].call(("breaks", base.target, SEED, base.state),
                                                   self.options.timeout)
                if not isinstance(measured, RunResult):
                    report.breaks[tree] = measured
            elif compiled[f"{tree}_compiled"].breaks is not None:
                report.breaks[tree] = compiled[f"{tree}_compiled"].breaks
        if report.rewritten_reused and "original" in report.breaks:
            report.breaks["rewritten"] = report.breaks["original"]

    def run_rewritten_eager(self, target: Target, report: TargetReport,
                            state: bytes | None) -> RunResult:
        """Run the rewritten target eagerly (every run imports the tree's files afresh, so
        files edited since the last run are read again)."""
        request = RunRequest(target, report.settings, Variant.EAGER, SEED, state,
                             deadline=self.options.timeout)
        return self._run(report, "rewritten_eager", "rewritten", request)

    def behaves_like_original(self, target: Target, report: TargetReport) -> bool:
        """Re-run the (edited) rewritten tree eagerly; True when it matches the original."""
        state = report.reference.state if report.reference else None
        rewritten = self.run_rewritten_eager(target, report, state)
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
            report.worst(Verdict.COMPILE_ERROR, f"{label} raised where eager did not: {message}"
                         + (f" ({compiled.exception.frame})" if compiled.exception.frame else ""))
            report.findings.append(Finding(Verdict.COMPILE_ERROR, f"{tree} eager", label, [],
                                           message))
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
                self.options.reproducer_dir, self.workers[tree].root, base,
                self.compare_options(base.settings)))
        report.findings.append(finding)
        report.worst(verdict, f"{label} differs from eager: {differences[0].message} "
                     f"({evidence.summary()})")

    def _triage(self, tree: str, base: RunRequest, eager: RunResult, compiled: RunResult,
                differences: list[cmp.Difference]) -> tuple[Verdict, judge.Evidence]:
        """Compiler bug, or rounding that the reference or the program's sensitivity explains?"""
        worker, timeout = self.workers[tree], self.options.timeout
        return decide(differences, eager, compiled,
                      lambda request: worker.call(request, timeout), base,
                      self.compare_options(base.settings))

    def compare_options(self, settings: CompileSettings) -> cmp.Options:
        """The comparison options with a target's ``strict`` and ``tolerance-scale``."""
        chosen = self.options.compare
        return replace(chosen, strict=chosen.strict or settings.strict,
                       scale=chosen.scale * settings.tolerance_scale)

    def _differ(self, left: RunResult, right: RunResult,
                settings: CompileSettings) -> list[cmp.Difference]:
        return differ(left, right, self.compare_options(settings))


class HarnessPool:
    """Validates several targets at once, each job with its own pair of warm workers.

    Compiling is mostly single-threaded Python (Dynamo, AOT autograd, Inductor's lowering)
    between bursts of parallel C++ builds, so one target at a time leaves cores idle; with
    ``jobs`` targets in flight they stay busy. Reports come back in the targets' order."""

    def __init__(self, original: Path, rewritten: Path | None, options: Options, jobs: int = 1):
        self.harnesses = [Harness(original, rewritten, options) for _ in range(max(1, jobs))]

    def validate_all(self, targets: list[Target], coverage: tuple[str, ...] = (),
                     done=None, after=None) -> list[TargetReport]:
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
        return sum(w.start_seconds for h in self.harnesses for w in h.workers.values())

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
