"""Four-way differential execution of one target, and the verdict that names the culprit.

For each target: original eager (twice: the determinism gate), original compiled,
rewritten eager, rewritten compiled. Original vs rewritten eager differing means
the rewrite changed behaviour; eager vs compiled differing for the same code is a
candidate compiler bug, unless a float64 eager reference shows the compiled
result is no further from the truth than eager itself (numerical noise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import compare as cmp
from .pool import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT, Worker
from .targets import CompileSettings, Target

SEED = 0
NOISE_MULTIPLIER = 2.0  # compiled may be this many times further from float64 than eager
VERDICT_ORDER = ("crash", "timeout", "oom", "error", "nondeterministic",
                 "rewrite-changed-behaviour", "compiler-bug", "compile-error", "numerical-noise",
                 "unvalidated", "passed")


@dataclass
class Options:
    """How targets are validated."""

    settings: CompileSettings = field(default_factory=CompileSettings)
    overrides: dict[str, object] = field(default_factory=dict)  # command line; beats headers
    compare: cmp.Options = field(default_factory=cmp.Options)
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes of address space per worker
    count_breaks: bool = True
    reproducer_dir: Path | None = None


@dataclass
class Finding:
    """One pair of runs that differ, and what that difference means."""

    verdict: str
    left: str
    right: str
    differences: list[cmp.Difference]
    detail: str = ""
    reproducer: str | None = None


@dataclass
class TargetReport:
    """Everything learned about one target."""

    target: str
    verdict: str = "passed"
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    breaks: dict[str, object] = field(default_factory=dict)  # "original"/"rewritten" → BreakReport
    seconds: dict[str, float] = field(default_factory=dict)
    covered: dict[str, set[int]] = field(default_factory=dict)
    settings: CompileSettings | None = None
    reference: dict = field(default_factory=dict, repr=False)  # the original eager run
    reverted: list = field(default_factory=list)

    def worst(self, verdict: str, detail: str = "") -> None:
        """Keep the most severe verdict seen so far."""
        if VERDICT_ORDER.index(verdict) < VERDICT_ORDER.index(self.verdict):
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

    def _run(self, tree: str, report: TargetReport, label: str, request: dict) -> dict:
        response = self.workers[tree].call(request, self.options.timeout)
        seconds = response.get("seconds", {})
        for key, value in seconds.items():
            report.seconds[f"{label}.{key}"] = value
        return response

    def validate(self, target: Target, coverage_files: tuple[str, ...] = ()) -> TargetReport:
        """Run the four-way comparison (two-way without a rewritten tree)."""
        settings = self.options.settings.merged(target.settings).merged(self.options.overrides)
        report = TargetReport(target.name, settings=settings)
        base = {"op": "run", "target": target, "settings": settings, "seed": SEED}
        first = self._run("original", report, "original_eager",
                          {**base, "variant": "eager", "coverage": coverage_files})
        if _failed(report, first, "original eager"):
            return report
        report.covered = first.get("covered", {})
        state = first["state"]
        base["state"] = state
        second = self._run("original", report, "original_eager_again",
                           {**base, "variant": "eager"})
        if _failed(report, second, "original eager (second run)"):
            return report
        if differences := self._differ(first, second):
            report.worst("nondeterministic", "two eager runs of the original disagree: "
                         + differences[0].message)
            report.findings.append(Finding("nondeterministic", "original eager",
                                           "original eager (again)", differences))
            return report
        report.reference = first
        self._compiled_pair(report, "original", base, first)
        if self.rewritten is not None:
            rewritten = self.run_rewritten_eager(target, report, state)
            if _failed(report, rewritten, "rewritten eager"):
                return report
            if differences := self._differ(first, rewritten):
                report.worst("rewrite-changed-behaviour", differences[0].message)
                report.findings.append(Finding("rewrite-changed-behaviour", "original eager",
                                               "rewritten eager", differences))
            self._compiled_pair(report, "rewritten", base, rewritten)
        if self.options.count_breaks:
            for tree in self.workers:
                response = self.workers[tree].call({**base, "op": "breaks"}, self.options.timeout)
                if "report" in response:
                    report.breaks[tree] = response["report"]
        return report

    def run_rewritten_eager(self, target: Target, report: TargetReport, state: bytes | None,
                            fresh: bool = False) -> dict:
        """Run the rewritten target eagerly; ``fresh`` re-imports edited files first."""
        if fresh:
            self.workers["rewritten"].call({"op": "purge"}, self.options.timeout)
        request = {"op": "run", "target": target, "settings": report.settings, "seed": SEED,
                   "state": state, "variant": "eager"}
        return self._run("rewritten", report, "rewritten_eager", request)

    def behaves_like_original(self, target: Target, report: TargetReport) -> bool:
        """Re-run the (edited) rewritten tree eagerly; True when it matches the original."""
        state = report.reference.get("state")
        rewritten = self.run_rewritten_eager(target, report, state, fresh=True)
        return "failure" not in rewritten and not self._differ(report.reference, rewritten)

    def _compiled_pair(self, report: TargetReport, tree: str, base: dict, eager: dict) -> None:
        label = f"{tree} compiled"
        compiled = self._run(tree, report, f"{tree}_compiled", {**base, "variant": "compiled"})
        if "failure" in compiled:
            report.worst(compiled["failure"], f"{label}: {compiled['message']}")
            return
        if compiled["exception"] and not eager["exception"]:
            message = f"{compiled['exception']['type']}: {compiled['exception']['message']}"
            report.worst("compile-error", f"{label} raised where eager did not: {message}")
            report.findings.append(Finding("compile-error", f"{tree} eager", label, [],
                                           message))
            return
        differences = self._differ(eager, compiled)
        if not differences:
            return
        verdict, detail = self._triage(tree, base, eager, compiled)
        finding = Finding(verdict, f"{tree} eager", label, differences, detail)
        if verdict == "compiler-bug" and self.options.reproducer_dir is not None:
            from .repro import write_reproducer

            finding.reproducer = str(write_reproducer(
                self.options.reproducer_dir, self.workers[tree].root, base["target"],
                report.settings, base["state"], self.options.compare))
        report.findings.append(finding)
        report.worst(verdict, f"{label} differs from eager: {differences[0].message}"
                     + (f" ({detail})" if detail else ""))

    def _triage(self, tree: str, base: dict, eager: dict, compiled: dict) -> tuple[str, str]:
        """Compiler bug, or no further from a float64 reference than eager is?"""
        reference = self.workers[tree].call({**base, "variant": "eager", "float64": True},
                                            self.options.timeout)
        if "failure" in reference or reference["exception"]:
            return "compiler-bug", "no float64 reference available"
        truth = reference["observed"]["output"]
        eager_error = cmp.max_errors(truth, eager["observed"]["output"])
        compiled_error = cmp.max_errors(truth, compiled["observed"]["output"])
        detail = (f"max abs error vs float64: eager {eager_error[0]:.3g}, "
                  f"compiled {compiled_error[0]:.3g}")
        structural = any(d.kind != "value" for d in self._differ(eager, compiled))
        if not structural and compiled_error[0] <= NOISE_MULTIPLIER * eager_error[0] + 1e-12:
            return "numerical-noise", detail
        return "compiler-bug", detail

    def _differ(self, left: dict, right: dict) -> list[cmp.Difference]:
        if left["exception"] or right["exception"]:
            if left["exception"] and right["exception"] and (
                    left["exception"]["type"] == right["exception"]["type"]):
                return []
            return [cmp.Difference("exception", "type", f"exception {_exc(left)} vs "
                                   f"{_exc(right)}")]
        return cmp.compare(left["observed"], right["observed"], self.options.compare,
                           path="result")


def _exc(run: dict) -> str:
    exception = run["exception"]
    return "none" if exception is None else f"{exception['type']}: {exception['message'][:200]}"


def _failed(report: TargetReport, response: dict, label: str) -> bool:
    if "failure" in response:
        report.worst(response["failure"], f"{label}: {response['message']}")
        return True
    if label.startswith("original eager") and response["exception"]:
        exception = response["exception"]
        out_of_memory = exception["type"] == "MemoryError" or (
            "can't allocate memory" in exception["message"])
        report.worst("oom" if out_of_memory else "error", f"{label} raised {_exc(response)}")
        return True
    return False
