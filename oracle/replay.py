"""Replay one target's eager-vs-compiled comparison in this process, judged exactly as the
oracle judges it: what a reproducer script runs.

The reproducer folder carries a copy of the modules this one imports (settings, protocol,
compare, records, observe, reference, judge, graphbreaks, worker), so it needs only torch
and the target's source tree, and its verdict cannot drift from the oracle's.
"""

from __future__ import annotations

from dataclasses import replace

from . import compare as cmp
from .judge import Verdict, decide, differ
from .protocol import RunRequest, RunResult, Variant
from .worker import Session


def replay(root: str, request: RunRequest, options: cmp.Options) -> Verdict:
    """Run ``request``'s target eagerly twice and compiled once, judge, print the outcome."""
    session = Session({"original": root})
    eager = _checked(session.run(request), "eager")
    request = replace(request, grad_inputs=eager.grad_inputs)
    again = _checked(session.run(request), "eager (again)")
    if differences := differ(eager, again, options):
        return _say(Verdict.NONDETERMINISTIC, differences[0].message)
    compiled = _checked(session.run(replace(request, variant=Variant.COMPILED)), "compiled")
    if compiled.exception and not eager.exception:
        return _say(Verdict.COMPILE_ERROR, f"compiled raised {compiled.exception.describe()}")
    differences = differ(eager, compiled, options, strides=True)
    if not differences:
        return _say(Verdict.PASSED, "eager and compiled agree")
    verdict, evidence = decide(differences, eager, compiled, session.run, request, options)
    for difference in differences[:10]:
        print(f"  {difference.message}")
    return _say(verdict, evidence.summary())


def _checked(result: RunResult, label: str) -> RunResult:
    if result.failure is not None:
        raise SystemExit(f"{label} run failed: {result.failure.message}")
    return result


def _say(verdict: Verdict, detail: str) -> Verdict:
    print(f"{verdict.value}: {detail}")
    return verdict
