"""Replay one target's eager-vs-compiled comparison in this process, judged exactly as the
oracle judges it: what a reproducer script runs, and what the minimiser asks of every
candidate (``judge``, which returns the differences as well as the verdict).

The reproducer folder carries a copy of the modules this one imports (settings, protocol,
compare, records, observe, reference, judge, graphbreaks, worker), so it needs only torch
and the target's source tree, and its verdict cannot drift from the oracle's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from . import compare as cmp
from .judge import Verdict, decide, differ, excuse_crash, nondeterminism
from .protocol import RunRequest, RunResult, Variant
from .worker import Session


@dataclass
class Judgement:
    """A replay's verdict, its one-line evidence, the differences behind it and the runs."""

    verdict: Verdict
    detail: str
    differences: list[cmp.Difference] = field(default_factory=list)
    eager: RunResult | None = None
    compiled: RunResult | None = None
    undefined: tuple[str, ...] = ()  # rules of undefined behaviour that explain none of it


def replay(root: str, request: RunRequest, options: cmp.CompareOptions) -> Verdict:
    """Run ``request``'s target eagerly twice and compiled once, judge, print the outcome."""
    judgement = judge(root, request, options)
    if judgement.verdict not in (Verdict.NONDETERMINISTIC, Verdict.COMPILE_ERROR):
        for difference in judgement.differences[:10]:
            print(f"  {difference.message}")
    print(f"{judgement.verdict.value}: {judgement.detail}")
    return judgement.verdict


class Unwanted(Exception):
    """The differences are not the ones asked for (``judge``'s ``wanted``): not triaged;
    ``before_backward``: found before the compiled backward ran (``wanted_forward``)."""

    def __init__(self, differences: list[cmp.Difference], before_backward: bool = False):
        super().__init__(", ".join(f"{d.kind} at {d.path}" for d in differences[:5]))
        self.differences = differences
        self.before_backward = before_backward


def judge(root: str, request: RunRequest, options: cmp.CompareOptions,
          eager: RunResult | None = None,
          wanted: Callable[[list[cmp.Difference]], bool] | None = None,
          wanted_forward: Callable[[list[cmp.Difference]], bool] | None = None) -> Judgement:
    """The verdict on ``request``'s target in the tree at ``root``, printing nothing; a run
    that cannot complete raises ``SystemExit`` with the reason. ``eager``: the first eager
    run, already made (the minimiser's screen). ``wanted``: when it refuses the differences
    between eager and compiled, ``Unwanted`` is raised before the triage runs anything.
    ``wanted_forward``: the same for the differences of the compiled call alone (outputs,
    inputs, state: no gradients), asked before its backward is compiled and run."""
    session = Session({"original": root})
    eager = eager or _checked(session.run(request), "eager")
    request = replace(request, grad_inputs=eager.grad_inputs)
    again = _checked(session.run(request), "eager (again)")
    excused = None
    if differences := differ(eager, again, options):
        verdict, evidence = nondeterminism(differences, eager, again, session.run, request)
        if evidence is None:
            return Judgement(verdict, differences[0].message, differences, eager)
        # Undefined behaviour explains it (uninitialised memory): judge the compiled run
        # still, and keep this verdict unless the compiled run shows a bug of its own.
        excused = Judgement(verdict, evidence.summary(), differences, eager)
    screen = None if wanted_forward is None else _forward_screen(eager, options, wanted_forward)
    compiled = _checked(session.run(replace(request, variant=Variant.COMPILED), screen),
                        "compiled")
    if compiled.exception and not eager.exception:
        triage = excuse_crash(eager, compiled, session.run, request)
        if triage.excused is not None:
            return Judgement(triage.excused[0], f"compiled raised "
                             f"{compiled.exception.describe()}; {triage.excused[1].summary()}",
                             [], eager, compiled)
        return Judgement(Verdict.COMPILE_ERROR, f"compiled raised {compiled.exception.describe()}",
                         [], eager, compiled, triage.undefined)
    differences = differ(eager, compiled, options, strides=True)
    if not differences:
        return excused or Judgement(Verdict.PASSED, "eager and compiled agree", [], eager,
                                    compiled)
    if wanted is not None and not wanted(differences):
        raise Unwanted(differences)
    verdict, evidence = decide(differences, eager, compiled, session.run, request, options)
    if excused is not None and verdict.rank > excused.verdict.rank:
        return excused
    return Judgement(verdict, evidence.summary(), differences, eager, compiled,
                     evidence.undefined)


def _forward_screen(eager: RunResult, options: cmp.CompareOptions,
                    wanted: Callable[[list[cmp.Difference]], bool]
                    ) -> Callable[[RunResult], None]:
    """What ``Session.run`` calls before a compiled backward: raises ``Unwanted`` when
    ``wanted`` refuses the differences between the calls, gradients left out of both."""
    forward = None if eager.observed is None else replace(
        eager, observed={k: v for k, v in eager.observed.items() if k != "grads"})

    def screen(called: RunResult) -> None:
        if forward is not None and not wanted(found := differ(forward, called, options,
                                                              strides=True)):
            raise Unwanted(found, before_backward=True)
    return screen


def _checked(result: RunResult, label: str) -> RunResult:
    if result.failure is not None:
        raise SystemExit(f"{label} run failed: {result.failure.message}")
    return result
