"""``eqrewrite reduce``: shrink a reproducer folder to the smallest program that still fails.

A reproducer folder (``repro.py``, a copy of the oracle core, maybe ``state.pt``; see
``repro.py``) names a target file in a source tree. The minimiser copies that one file into
candidate trees and makes it smaller step by step (``candidates/``): compile settings the
finding does not need dropped (switches, mode, ``dynamic``, ``fullgraph``, the inputs'
gradients, ``inference``), delta debugging over every statement list, unread ``forward``
and ``__init__`` parameters removed with their inputs, unread members removed, loops that
run once unrolled, compound statements replaced by a block, expressions by an operand,
numbers by simpler ones, input dimensions shrunk, random inputs written as small literals.
Every candidate is judged in a separate checking process (``reduceworker.py``) with the
folder's own copy of the oracle core, under a time limit, and kept only when

- the verdict is the one the original got (``compiler-bug``, or ``compile-error`` for a
  compile crash's reproducer), with the same exceptions on both sides;
- for a compiler bug, its differences are among the original's (path and kind, e.g.
  ``exact`` at ``result['output'][1]``) and include the original's first one: the same
  finding, not a new one; for a compile crash, the compiled run's error reads the same once
  numbers, names and paths are masked (the campaign's error signature);
- for shrunk inputs, every input keeps its dtype, rank and layout class (contiguous,
  channels-last, expanded, offset, empty).

Candidates that time out, crash or raise in the oracle are rejected, and each candidate is
screened with the cheapest check that can show it lost the finding: one eager run rejects,
without compiling, those whose eager run raises what the original's did not (most removed
statements leave a name undefined); when the original fails the same way with ``aot_eager``
(the finding is Dynamo's or AOT autograd's, not Inductor's code generation), that backend
judges the candidates, and the full one confirms the program after every ``confirm_every``
(16) candidates it kept and at the end: when it does not keep it, bisection finds a kept
candidate it refuses, the reduction goes back to the program before it and goes on from
there, so the result is always one the full backend keeps (``confirm_every=0``: every
candidate the cheaper backend keeps is compiled with the full one before it is kept).
The order of candidates is fixed, so a run is deterministic up to time limits. With
``jobs`` above 1, that many checking processes judge the next candidates of a pass at once
(speculatively: the first kept one in the pass's order wins, and the judgements after it are
dropped), so the program reduced is the one a serial run reduces. The result is written next to the
folder: ``reduced/`` (a reproducer folder in the same format, with the reduced file in
``reduced/tree/``) and ``minimal.py`` (``standalone.py``: one script, torch only).

This module is the command's course, from the folder to its outputs; the parts live beside
it: ``checker.py`` (the checking process's handle), ``judge.py`` (one candidate judged,
screens first), ``signature.py`` (the finding's signature, the tally), ``schedule.py`` (the
current program, candidates judged ahead, confirmation by bisection), ``passes.py`` (the
passes' order), ``outputs.py`` (``reduced/``, ``minimal.py``, their verification) and
``budget.py``.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .. import formats
from ..formats import Answer, Description
from . import candidates as rp
from .budget import Budget, Clock
from .checker import START_TIMEOUT, Checker, ReduceError
from .judge import Judge
from .outputs import Result, verify, write_minimal, write_reduced
from .passes import Passes
from .schedule import Scheduler
from .signature import elements

__all__ = ["Budget", "NotReproduced", "ReduceError", "Result", "find_reproducer",
           "reduce_folder"]

_NEEDED = ("ROOT", "TARGET", "SETTINGS", "REQUEST", "OPTIONS")
# Backends that judge a candidate more cheaply than Inductor (no code generation), tried in
# this order: the first with which the original shows its finding screens every candidate.
CHEAPER = {"inductor": ("aot_eager",)}


class NotReproduced(Exception):
    """The reproducer does not fail (any more) with its verdict (exit 1)."""


# -- the folder ---------------------------------------------------------------------------------


def find_reproducer(folder: Path) -> Path:
    """The reproducer folder: ``folder`` itself when it holds ``repro.py``, else its one
    subfolder that does (a campaign's finding folder)."""
    if not folder.is_dir():
        raise ReduceError(f"{folder}: not a folder")
    if (folder / formats.SCRIPT).is_file():
        found = folder
    else:
        inside = sorted(p.parent for p in folder.glob(f"*/{formats.SCRIPT}"))
        # ``reduced/`` is this command's own output: reducing again starts from the original.
        inside = [p for p in inside if p.name != formats.REDUCED] or inside
        if len(inside) != 1:
            raise ReduceError(f"{folder}: no reproducer (repro.py) in it or in a subfolder"
                              if not inside else f"{folder}: several reproducers "
                              f"({', '.join(p.name for p in inside)}); name one")
        found = inside[0]
    _check_script(found / formats.SCRIPT)
    if not (found / formats.CORE_PACKAGE / "replay.py").is_file():
        raise ReduceError(f"{found}: no _eqrewrite_oracle/ (the copy of the oracle core a "
                          "reproducer carries)")
    return found.resolve()


def _check_script(script: Path) -> None:
    try:
        tree = ast.parse(script.read_text(encoding="utf-8"), str(script))
    except (SyntaxError, UnicodeDecodeError, ValueError) as error:
        line = getattr(error, "lineno", None)
        raise ReduceError(f"{script}:{line or 1}: not Python source: {error}") from None
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    missing = [name for name in _NEEDED if name not in assigned]
    if missing:
        raise ReduceError(f"{script}: not an eqrewrite reproducer (no {', '.join(missing)})")


# -- one folder, end to end ---------------------------------------------------------------------


def reduce_folder(folder: Path, out: Path | None = None, budget: Budget | None = None,
                  say: Callable[[str], None] = lambda _: None, verify: bool = True,
                  jobs: int = 1) -> Result:
    """Reduce the reproducer in ``folder``; write ``minimal.py`` and ``reduced/`` to ``out``
    (default: ``folder``), judging ``jobs`` candidates at once. ReduceError for a bad folder,
    NotReproduced when it does not fail."""
    clock = Clock(budget or Budget())
    repro = find_reproducer(folder)
    out = (out or folder).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="eqrewrite-reduce-"))
    (scratch / "trees").mkdir()
    checker = Checker(repro, scratch / "trees", scratch / "worker.log")
    judge: Judge | None = None
    try:
        say(f"loading {repro} (starting torch)")
        description = _start(checker, scratch)
        relative, original = _target_file(repro, description)
        judge = Judge(checker, scratch, relative, clock, jobs)
        for other in judge.checkers[1:]:
            other.launch()  # they load torch while the baseline is judged
        schedule = Scheduler(judge, original, say)
        baseline = _baseline(schedule, Path(description["root"]))
        say(f"reproduces: {schedule.finding()[0].describe()} ({baseline['seconds']:.1f}s)"
            + (f"; candidates screened with {judge.screen_backend} first"
               if judge.screen_backend else ""))
        reducing = time.monotonic()
        stopped = Passes(schedule).run()
        result = _result(schedule, repro, out, original, baseline, stopped,
                         time.monotonic() - reducing)
        _write(result, repro, checker.core, schedule)
    finally:
        checker.close()
        if judge is not None:
            judge.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if verify:
        _verify(result, judge, clock)
    return result


def _start(checker: Checker, scratch: Path) -> Description:
    """Start the checking process on the folder's own core; on this installation's when
    the folder's predates ``replay.judge``."""
    description = checker.start()
    if description["judge"]:
        return description
    checker.close()
    checker.core = scratch / "core"
    formats.vendor_core(checker.core / formats.CORE_PACKAGE)
    return checker.start()


def _result(schedule: Scheduler, repro: Path, out: Path, original: str, baseline: Answer,
            stopped: str | None, reducing: float) -> Result:
    """What the reduction did (its seconds in all are set once the outputs are written)."""
    judge = schedule.judge
    signature, answer = schedule.finding()
    return Result(
        repro, judge.description["target"].get("name", ""), signature,
        _sizes(original, baseline), _sizes(schedule.text, answer),
        schedule.tally, 0.0, stopped, judge.description["has_state"] and not schedule.state,
        out / formats.REDUCED, out / formats.MINIMAL, jobs=judge.jobs, reducing=reducing,
        screen_backend=judge.screen_backend,
        confirm_every=judge.clock.budget.confirm_every if judge.deferring else 0,
        dropped=list(schedule.dropped))


def _write(result: Result, repro: Path, core: Path | None, schedule: Scheduler) -> None:
    """``reduced/`` with its ``reduction.json``, and ``minimal.py``."""
    try:
        write_reduced(result.reduced, repro, core, schedule)
        write_minimal(result.minimal, schedule, schedule.judge.probe(schedule.text,
                                                                      schedule.state))
        result.seconds = time.monotonic() - schedule.clock.started
        formats.write_json(result.reduced / formats.REDUCTION, result.to_dict())
    except OSError as error:
        raise ReduceError(f"{error.filename or result.reduced.parent}: cannot write: "
                          f"{error.strerror or error}") from None


def _verify(result: Result, judge: Judge | None, clock: Clock) -> None:
    """Run the written reproducers once more, within what is left of the time budget."""
    assert judge is not None  # the reduction got as far as its result
    left = clock.remaining()
    if left is None or left >= 1.0:
        result.verified = verify(result, judge.timeout, left)
    else:  # the budget is spent: the reproducers are written but not run again
        result.stopped = result.stopped or (
            f"--time-budget {clock.budget.time_budget:g}s reached")


def _target_file(repro: Path, description: Description) -> tuple[Path, str]:
    """The target's file, relative to its tree, and its text."""
    target = description["target"]
    file = target.get("file")
    if file is None:
        raise ReduceError(f"{repro}: the target {target.get('name')} comes from a factory; "
                          "only targets defined in a file can be reduced")
    path = Path(description["root"]) / file
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ReduceError(f"{repro}/{formats.SCRIPT}: cannot read the target's source {path}: "
                          f"{getattr(error, 'strerror', None) or error}") from None
    try:
        ast.parse(text)
    except SyntaxError as error:
        raise ReduceError(f"{path}:{error.lineno}: syntax error: {error.msg}") from None
    return Path(file), text


def _baseline(schedule: Scheduler, root: Path) -> Answer:
    """Judge the unchanged target in a tree of its own (else in its whole source tree) and
    record the finding's signature."""
    judge, text, state = schedule.judge, schedule.text, schedule.state
    timeout = judge.clock.budget.timeout or START_TIMEOUT
    judge.timeout = timeout
    answer = judge.judge(text, state)
    if _failing(answer, judge.fails) is not None and root.is_dir():
        whole = judge.checker.check(root, state, judge.clock.capped(timeout))
        if _failing(whole, judge.fails) is None:
            judge.base_tree = root
            answer = judge.judge(text, state)
        elif answer is None or "error" in answer:
            answer = whole
    problem = _failing(answer, judge.fails)
    if problem is not None:
        raise NotReproduced(f"{judge.checker.folder}: {problem}")
    assert answer is not None  # _failing(None) is not None
    schedule.settle_baseline(answer)
    judge.timeout = judge.clock.budget.timeout or max(60.0, 5 * answer["seconds"])
    judge.screen_backend = _cheaper_backend(schedule)
    return answer


def _cheaper_backend(schedule: Scheduler) -> str | None:
    """A backend cheaper than the reproducer's with which the unchanged program fails the
    same way (a Dynamo or AOT autograd bug does not need Inductor), or None."""
    signature, _ = schedule.finding()
    backend = schedule.judge.description["settings"]["backend"]
    for cheaper in CHEAPER.get(backend, ()):
        answer = schedule.judge.judge(schedule.text, schedule.state, backend=cheaper)
        if answer is not None and "screened" not in answer and signature.kept_by(answer):
            return cheaper
    return None


def _failing(answer: Answer | None, fails: str = "compiler-bug") -> str | None:
    """None when ``answer`` has the reproducer's verdict ``fails``, else why it does not
    fail."""
    if answer is None:
        return "the reproducer timed out or crashed"
    if "error" in answer:
        return f"the reproducer could not run: {answer['error'].splitlines()[-1]}"
    if answer["verdict"] != fails:
        return f"does not reproduce: the verdict is {answer['verdict']} ({answer['detail']})"
    return None


def _sizes(text: str, answer: Answer) -> dict[str, int]:
    """A program's size: statements, tokens, its inputs' elements."""
    size = rp.size(text)
    return {"statements": size.statements, "tokens": size.tokens,
            "input_elements": elements(answer["inputs"])}
