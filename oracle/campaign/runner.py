"""The campaign loop: seeds to an executor, results to the journal, findings and summary.

Seeds already in the journal are skipped (resume). At most two seeds per job are in flight,
so the time budget is honoured within one program per job: when it is spent nothing more is
submitted and the seeds in flight finish and are recorded. Every result is classified,
checked against the known issues and deduplicated by signature in this process, whatever
executor ran it; the first seed of each new signature gets a finding folder.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, cast

from ..formats import (
    CampaignContext,
    CampaignSummary,
    FindingSummary,
    JobFailure,
    ReductionOutcome,
    RootCauseSummary,
    write_json,
)
from . import known as known_issues
from . import outcome, rootcause, store
from .outcome import SeedResult

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

REDUCE_SECONDS = 600.0  # per new finding reduced, with --reduce (--reduce-budget)
# After the reduction's own budget, how long it may take to write its result and stop before
# it is killed (the reduction checks its budget between candidates and cuts the last one off).
REDUCE_GRACE = 30.0


class Executor(Protocol):
    """What the runner needs of an executor (``LocalExecutor``, ``RayExecutor``, a test's
    fake); ``name`` and ``jobs`` are read when present."""

    def submit(self, seed: int) -> None: ...

    def finished(self, timeout: float | None) -> list[tuple[int, SeedResult | BaseException]]:
        """Seeds done within ``timeout``, each with its result or the job's exception."""

    @property
    def in_flight(self) -> int: ...

    def close(self, cancel: bool = False) -> None: ...


@dataclass
class Campaign:
    """What to run and where to write it."""

    seeds: range | list[int]      # the CLI gives a range; any seeds will do
    out: Path
    executor: Executor
    context: CampaignContext      # torch version, settings: copied into finding.json
    known: list[known_issues.KnownIssue] = field(default_factory=list)
    budget: float | None = None   # seconds
    reduce: bool = False          # ``eqrewrite reduce`` new compiler-bug and compile-error findings
    progress: bool | None = None  # None: only when stderr is a terminal
    reduce_budget: float = REDUCE_SECONDS  # seconds per finding (the campaign's budget caps it)


class Runner:
    """Runs a ``Campaign``; ``run()`` returns the summary written to ``summary.json``."""

    def __init__(self, campaign: Campaign, finished: list[SeedResult]):
        self.c = campaign
        self.out = campaign.out.resolve()
        self.results: dict[int, SeedResult] = {r["seed"]: r for r in finished}
        self.findings: dict[str, FindingSummary] = {}
        for result in sorted(self.results.values(), key=lambda r: r["seed"]):
            self._count_finding(result)
        self.resumed = len(self.results)
        self.started = time.monotonic()
        self.job_seconds = 0.0
        self.job_failures: list[JobFailure] = []
        self.reductions: dict[str, ReductionOutcome] = {}  # finding folder -> its reduction
        self.stopped_by = "done"
        self.root_causes: list[RootCauseSummary] = []  # filled once the seeds are done

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> CampaignSummary:
        todo = [seed for seed in self.c.seeds if seed not in self.results]
        journal = store.Journal(self.out / store.JOURNAL)
        window = 2 * max(1, getattr(self.c.executor, "jobs", 1))
        progress = _Progress(len(self.c.seeds), self.resumed, self.c.progress)
        interrupted = False
        try:
            with progress:
                while todo or self.c.executor.in_flight:
                    while todo and self.c.executor.in_flight < window and not self._spent():
                        self.c.executor.submit(todo.pop(0))
                    if self._spent() and todo:
                        self.stopped_by = "time budget"
                        todo = []
                    for seed, result in self.c.executor.finished(timeout=1.0):
                        self._record(journal, seed, result)
                        progress.update(seed, self._counts())
                    self._write_summary()
        except KeyboardInterrupt:
            interrupted, self.stopped_by = True, "interrupted"
            raise
        finally:
            journal.close()
            self.c.executor.close(cancel=interrupted)
            self._merge_root_causes()
            self._write_summary()
        return self.summary()

    def _merge_root_causes(self) -> None:
        """One finding per root cause, read from the reduced programs (``rootcause.py``)."""
        findings = self.out / store.FINDINGS
        if findings.is_dir():
            self.root_causes = [{"root_cause": g.cause.key, "cause": g.cause.describe(),
                                 "representative": g.representative.name,
                                 "findings": len(g.folders), "seeds": g.seeds}
                                for g in rootcause.merge(findings,
                                                         self.out / rootcause.ROOT_CAUSES)]

    def _spent(self) -> bool:
        return self.c.budget is not None and time.monotonic() - self.started >= self.c.budget

    # -- one result --------------------------------------------------------------------------

    def _record(self, journal: store.Journal, seed: int,
                result: SeedResult | BaseException) -> None:
        if isinstance(result, BaseException):
            # The job process itself failed (killed, out of memory, a bug of ours): not an
            # outcome of the program, so not journaled; a resumed campaign tries it again.
            self.job_failures.append({"seed": seed, "error": f"{type(result).__name__}: "
                                      f"{result}"[:300]})
            return
        self.job_seconds += result.get("seconds", 0.0)
        result["at"] = round(time.monotonic() - self.started, 2)  # seconds into this run
        if result["class"] in outcome.FINDING_CLASSES:
            self._classify(result)
        journal.append(result)
        plain: Mapping[str, object] = result  # what the journal keeps of it
        self.results[seed] = cast(SeedResult, {k: plain[k] for k in store.JOURNALED
                                               if k in plain})

    def _classify(self, result: SeedResult) -> None:
        """Signature, known issue, and the finding folder of a new signature."""
        result["signature"] = outcome.signature(result["class"], result.get("kinds", []),
                                                result.get("signature_ops", []),
                                                result.get("error", ""))
        issue = known_issues.recognise(self.c.known, result)
        if issue is not None:
            result["known"] = issue.url
        elif store.finding_name(result) in self.findings:
            store.add_seed(store.finding_folder(self.out, result), result["seed"])
        elif result.get("program"):
            folder = store.write_finding(self.out, result, self.c.context)
            if self.c.reduce and (result["class"] == outcome.COMPILER_BUG
                                  or result.get("verdict") == "compile-error"):
                self.reductions[folder.name] = self._reduce(folder)
        self._count_finding(result)

    def _reduce(self, folder: Path) -> ReductionOutcome:
        """Reduce a new finding within its budget, and within what is left of the campaign's
        (the campaign waits for it); how it went."""
        budget = self.c.reduce_budget
        if self.c.budget is not None:
            budget = min(budget, self.c.budget - (time.monotonic() - self.started))
        if budget < 1.0:
            return {"status": "skipped: the campaign's time budget is spent", "budget": 0.0}
        return {**_reduce(folder, budget), "budget": round(budget, 1)}

    def _count_finding(self, result: SeedResult) -> None:
        if result.get("class") not in outcome.FINDING_CLASSES or result.get("known"):
            return
        name = store.finding_name(result)
        entry = self.findings.setdefault(name, {
            "folder": store.finding_folder(self.out, result).relative_to(self.out).as_posix(),
            "class": result["class"], "rule": result.get("rule"),
            "signature": result["signature"], "kinds": result.get("kinds", []),
            "ops": result.get("signature_ops", []), "error": result.get("error", ""),
            "confidence": result.get("confidence"), "seeds": []})
        entry["seeds"] = sorted(set(entry["seeds"]) | {result["seed"]})

    # -- the summary -------------------------------------------------------------------------

    def _counts(self) -> Counter[str]:
        return Counter(r["class"] for r in self.results.values())

    def summary(self) -> CampaignSummary:
        elapsed = time.monotonic() - self.started
        ran = len(self.results) - self.resumed
        known = Counter(r["known"] for r in self.results.values() if r.get("known"))
        ops = Counter(op for r in self.results.values() for op in (r.get("ops") or {}))
        validated = [r for r in self.results.values()
                     if r["class"] != outcome.GENERATION_FAILED]
        attempts = sum(r.get("attempts", 0) for r in validated)
        return {
            "seeds": {"asked": len(self.c.seeds), "first": min(self.c.seeds, default=None),
                      "last": max(self.c.seeds, default=None), "finished": len(self.results),
                      "this_run": ran, "resumed": self.resumed},
            "stopped_by": self.stopped_by,
            "executor": getattr(self.c.executor, "name", "?"),
            "jobs": getattr(self.c.executor, "jobs", None),
            "elapsed_seconds": round(elapsed, 1),
            "job_seconds": round(self.job_seconds, 1),  # seeds' own wall time, summed
            "programs_per_minute": round(60 * ran / elapsed, 2) if elapsed and ran else 0.0,
            "classes": dict(sorted(self._counts().items())),
            "verdicts": dict(Counter(r.get("verdict") for r in validated)),
            "rewritten": sum(1 for r in validated if r.get("edits")),
            "generation": {"programs": len(validated), "drafted": attempts,
                           "validity_rate": round(len(validated) / attempts, 4)
                           if attempts else None},
            "findings": sorted((f for f in self.findings.values()
                                if f["class"] != outcome.EXCUSED), key=lambda f: (
                outcome.CLASSES.index(f["class"]), f["seeds"][0])),
            # Programs the semantics triage excused, by rule: counted, never reported.
            "excused": dict(sorted(Counter(r.get("rule") for r in self.results.values()
                                           if r["class"] == outcome.EXCUSED).items())),
            "job_failures": self.job_failures,
            "known": [{"url": url, "seeds": count} for url, count in sorted(known.items())],
            "op_coverage": {"ops_used": len(ops), "uses": dict(sorted(ops.items()))},
            "rules_applied": dict(Counter(rule for r in validated
                                          for rule in r.get("edits") or [])),
            "reductions": self.reductions,
            "root_causes": self.root_causes,
            "context": self.c.context,
        }

    def _write_summary(self) -> None:
        write_json(self.out / store.SUMMARY, self.summary())


def _reduce(folder: Path, budget: float) -> ReductionOutcome:
    """Shrink a new finding with ``eqrewrite reduce`` within ``budget`` seconds (the command's
    ``--time-budget``, which covers its start-up, candidates and final check); a reduction
    that overstays it by ``REDUCE_GRACE`` is killed with its checking processes."""
    import importlib.util
    import os
    import signal
    import subprocess

    if importlib.util.find_spec("eqrewrite.oracle.minimising.reduce") is None:
        return {"status": "skipped: the minimiser is not installed"}
    started = time.monotonic()
    # The finding folder holds one repro_*/ folder, which `reduce` finds; it writes
    # minimal.py and reduced/ beside it. A session of its own: killed as one group.
    process = subprocess.Popen([sys.executable, "-m", "eqrewrite.rewriter", "reduce",
                                str(folder), "-q", "--time-budget", f"{budget:.1f}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        code = process.wait(budget + REDUCE_GRACE)
        status = {0: "reduced", 1: "did not reproduce or the result did not fail again",
                  2: "not a reproducer folder"}.get(code, f"failed (exit {code})")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        status = "killed: overstayed its time budget"
    return {"status": status, "seconds": round(time.monotonic() - started, 1)}


class _Progress:
    """A rich progress bar on stderr, only when stderr is a terminal (or ``enabled``)."""

    def __init__(self, total: int, done: int, enabled: bool | None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.total, self.done = total, done

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(TextColumn("campaign"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("{task.description}"),
                                console=Console(stderr=True))
            self.bar.__enter__()
            self.task = self.bar.add_task("", total=self.total, completed=self.done)
        return self

    def update(self, seed: int, counts: Counter[str]) -> None:
        if self.bar is None or self.task is None:
            return
        shown = ", ".join(f"{outcome_class} {counts[outcome_class]}"
                          for outcome_class in outcome.CLASSES if counts[outcome_class])
        self.bar.update(self.task, advance=1, description=f"seed {seed}: {shown}")

    def __exit__(self, exc_type: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.__exit__(exc_type, error, trace)
