"""Is a difference between eager and compiled runs a compiler bug, or rounding?

Only floating-point *values* may ever be excused (``Difference.floating``): a difference in
an integer, bool or index output, in shape, dtype, strides or layout, in a Python value, in
what was printed, or in the exception raised is a ``compiler-bug`` whatever the numbers say.

A floating difference is excused as ``numerical-noise`` when one of three measurements
explains it (the first two element by element):

1. **The float64 reference** (``reference.py``): at every element where eager and compiled
   disagree, compiled is no more than twice as far from the reference as eager is, or within
   the dtype's tolerance of it; where NaN or infinity appear on one side only, the reference
   has the compiled side's class (a float16 overflow to NaN eagerly that the compiler avoided
   by computing in float32 is numerics); a sign of zero or NaN (``--strict``) must match the
   reference's.
2. **The program's sensitivity**: perturbed eager runs (inputs and parameters times
   ``1 ± 2 eps``) move the result by ``noise``; compiled may differ from eager by up to
   twice that (plus tolerance), and may differ in NaN/infinity wherever a perturbation also
   flips them. This covers ill-conditioned programs whose float64 reference is no guide
   (normalising a constant, then ``t / t.clamp(min=1e-6)``; ``where(x > 0, ...)`` with ``x``
   mathematically zero).

3. **Eager's rounding, emulated** (Inductor only, when 1 and 2 leave a floating value
   unexplained): compiled once more with ``inductor.emulate_precision_casts``, which rounds
   float16/bfloat16 intermediates as eager does, the value agrees with eager. Inductor
   keeping such intermediates in float32 is by design; a discrete consequence of it (a
   count, a comparison) is still a compiler bug, as maintainers treat it.

One floating difference is never excused, however sensitive the program: an **integer
jump** (``Evidence.cause`` ``integer-jump``). The program calls a discontinuous rounding
operation (floor division, ``div`` with a ``rounding_mode``, ``remainder``, ``fmod``,
``floor``, ``ceil``, ``round``, ``trunc``: the float64 reference run records what it calls),
and where eager and compiled differ, the values are whole numbers and compiled is off by whole
units while the float64 reference equals eager, and nowhere sides with compiled; and the
reference's answer there is not decided by rounding: four more float64 runs with the inputs
nudged by ``1 ± 2**-40`` (random signs, in pairs of opposite signs) give the same whole
numbers. A jump of a discontinuous function is
within the program's sensitivity (a quotient a rounding away from an integer), but when exact
arithmetic decides the jump and agrees with eager, compiled computed the wrong side of it
(``1.0 // 0.1``: eager and Python 9, Inductor 10, pytorch#197895). A reference that sides with
compiled (eager rounded a float16 intermediate across an integer) or that a nudge changes
(``floor(x - x.mean())`` of a constant row: exactly 0, so each side's rounding residue decides)
leaves the difference to the rules above.

Everything the triage learned is kept as ``Evidence`` on the finding: which side the
reference agrees with, the errors measured, the sensitivity, and what excused it.

Here: the verdicts, the evidence, the differences of two runs, the semantics triage and the
decision with the runs it asks for; the element-wise measurements of rules 1 and 2 and of an
integer jump are ``numerics.py``'s.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from . import compare as cmp
from . import semantics
from .numerics import (
    Jump,
    errors,
    integer_jumps,
    reference_agreement,
    sensitivity,
    steady,
    unexplained_by_reference,
    unexplained_by_sensitivity,
)
from .protocol import RaisedException, RunRequest, RunResult, Variant

PERTURBATIONS = 3        # perturbed eager runs that measure a program's sensitivity
NUDGED_REFERENCES = 4     # float64 runs with nudged inputs that check an integer jump's answer

# Discontinuous operations with whole-number results, as the float64 reference records the
# torch functions a program calls (a division with a rounding mode as ``div:floor``).
ROUNDING = frozenset({
    "floor", "floor_", "ceil", "ceil_", "round", "round_", "trunc", "trunc_", "fix", "fix_",
    "floor_divide", "floor_divide_", "__floordiv__", "__rfloordiv__", "__ifloordiv__",
    "remainder", "remainder_", "__mod__", "__rmod__", "__imod__", "fmod", "fmod_",
    *(f"{name}:{mode}" for name in ("div", "div_", "divide", "divide_")
      for mode in ("floor", "trunc"))})
INTEGER_JUMP = "integer-jump"


class Verdict(str, enum.Enum):
    """What a target's runs showed, most severe first (the order reports sort by)."""

    CRASH = "crash"
    TIMEOUT = "timeout"
    OOM = "oom"
    ERROR = "error"
    NONDETERMINISTIC = "nondeterministic"
    REWRITE_CHANGED_BEHAVIOUR = "rewrite-changed-behaviour"
    COMPILER_BUG = "compiler-bug"
    COMPILE_ERROR = "compile-error"
    UNSUPPORTED = "unsupported"                   # the program does what PyTorch does not
    UNDEFINED_BEHAVIOUR = "undefined-behaviour"   # support, or what it leaves undefined,
    WARNING_ONLY = "warning-only"                 # or differs only in warnings (semantics.py)
    NUMERICAL_NOISE = "numerical-noise"
    PASSED = "passed"

    @property
    def rank(self) -> int:
        return list(Verdict).index(self)


# What the semantics triage gives instead of a compiler bug: never reported as one.
EXCUSED = frozenset({Verdict.UNSUPPORTED, Verdict.UNDEFINED_BEHAVIOUR, Verdict.WARNING_ONLY})
FAILING = frozenset({Verdict.REWRITE_CHANGED_BEHAVIOUR, Verdict.COMPILER_BUG,
                     Verdict.COMPILE_ERROR, Verdict.CRASH, Verdict.TIMEOUT, Verdict.OOM,
                     Verdict.ERROR})


@dataclass(frozen=True)
class Evidence:
    """How a finding between eager and compiled was decided."""

    reference: str                   # agrees with eager | compiled | both | neither | unavailable
    reference_note: str = ""         # why unavailable, or where it disagrees
    eager_error: float | None = None     # max |eager - reference| over the differing values
    compiled_error: float | None = None  # max |compiled - reference| over the same values
    difference: float | None = None      # max |compiled - eager|
    sensitivity: float | None = None     # max |perturbed - eager|, when measured
    excused_by: str = ""  # "reference" | "sensitivity" | "precision casts" | "" (not excused)
    deterministic: bool = True       # two eager runs agreed exactly (the gate before judging)
    cause: str = ""       # a class of bug the triage recognised: "integer-jump" | ""
    cause_note: str = ""  # what it saw, in words
    # Rules of undefined behaviour the program also holds, which explain none of the
    # differences (the minimiser refuses a candidate that adds one: semantics.py).
    undefined: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for tables: the reference's side and the errors."""
        parts = [f"{self.cause}: {self.cause_note}"] if self.cause else []
        if not self.reference:  # the semantics triage decided; no reference was run
            return "; ".join(parts)
        parts.append(f"reference {self.reference}" if self.reference == "unavailable"
                     else f"reference agrees with {self.reference}")
        if self.reference_note:
            parts[-1] += f" ({self.reference_note})"
        if self.eager_error is not None and self.compiled_error is not None:
            parts.append(f"error vs float64: eager {self.eager_error:.3g}, "
                         f"compiled {self.compiled_error:.3g}")
        if self.sensitivity is not None:
            parts.append(f"sensitivity {self.sensitivity:.3g}")
        if self.excused_by:
            parts.append(f"excused by {self.excused_by}")
        if self.undefined:
            parts.append("the program also holds " + ", ".join(self.undefined)
                         + ", which explains none of it")
        return "; ".join(parts)


def differ(left: RunResult, right: RunResult, options: cmp.CompareOptions,
           strides: bool = False) -> list[cmp.Difference]:
    """Every observable difference between two completed runs (outcomes, exceptions too);
    with ``strides``, also the strides of the outputs (eager vs compiled)."""
    if left.exception or right.exception:
        return exception_differences(left.exception, right.exception)
    found = cmp.compare(left.observed, right.observed, options, path="result")
    if strides:
        # Neither raised, so both observed (a failed run is never compared).
        assert left.observed is not None and right.observed is not None
        found += cmp.stride_differences(left.observed["output"], right.observed["output"],
                                        "result['output']")
    return found


def exception_differences(left: RaisedException | None,
                          right: RaisedException | None) -> list[cmp.Difference]:
    """The same exception means: ``right`` is an instance of ``left``'s type, and its message
    contains ``left``'s (Dynamo may wrap a user exception, adding context)."""
    if left is not None and right is not None and left.type in right.bases and (
            left.message.strip() in right.message):
        return []
    shown = [e.describe() if e else "no exception" for e in (left, right)]
    return [cmp.Difference("result.exception", "exception",
                           f"result: raised {shown[0]} vs {shown[1]}")]


def decide(differences: list[cmp.Difference], eager: RunResult, compiled: RunResult,
           call: Callable[[RunRequest], RunResult], base: RunRequest,
           options: cmp.CompareOptions) -> tuple[Verdict, Evidence]:
    """The triage of ``py`` for one eager/compiled pair; ``call(request)`` runs the
    float64 reference and the perturbed runs on the tree's worker (or in-process, in a
    reproducer). First the semantics triage (``semantics.py``): differences that lie in
    values of undefined behaviour, or only in warnings, are no compiler bug; the rest go on
    to the numerical triage."""
    triage = semantic_triage(differences, eager, compiled, call, base)
    if triage.excused is not None:
        return triage.excused
    differences = triage.surviving
    floating = [d for d in differences if d.floating]
    exact = [d for d in differences if not d.floating]
    reference = call(replace(base, variant=Variant.REFERENCE, coverage=()))
    ref = reference.observed if reference.failure is None and (
        reference.exception is None) == (eager.exception is None) else None
    if ref is None:
        why = (reference.failure.message if reference.failure else
               reference.exception.describe() if reference.exception else "raised nothing")
        agreement, note = "unavailable", f"the float64 run failed: {why}"
        left = floating
    else:
        agreement, note = reference_agreement(differences, eager.observed,
                                                    compiled.observed, ref, options)
        left = unexplained_by_reference(floating, eager.observed, compiled.observed,
                                              ref, options)
    jumps = [] if ref is None else _integer_jumps(floating, eager, compiled, reference, call,
                                                    base, options)
    jumped = [jump.difference for jump in jumps]
    left = [d for d in left if not any(d is j for j in jumped)]
    hard = exact + jumped  # never excused
    excused_by = "reference" if floating and not left and not jumped else ""
    noise = None
    if left and not hard:
        perturbed = [call(replace(base, variant=Variant.PERTURBED, perturbation=i,
                                  coverage=())) for i in range(PERTURBATIONS)]
        moved = [p.observed for p in perturbed if p.failure is None and p.exception is None]
        if len(moved) == PERTURBATIONS:
            noise = sensitivity(left, eager.observed, moved)
            left = unexplained_by_sensitivity(left, eager.observed, compiled.observed,
                                                    moved, options)
            excused_by = "" if left else "sensitivity"
    if left and not hard and _emulation_explains(left, eager, compiled, call, base, options):
        left, excused_by = [], "precision casts"
    measured = errors(floating, eager.observed, compiled.observed, ref)
    verdict = Verdict.COMPILER_BUG if hard or left else Verdict.NUMERICAL_NOISE
    return verdict, Evidence(agreement, note, *measured, noise,
                             excused_by if verdict is Verdict.NUMERICAL_NOISE else "",
                             cause=INTEGER_JUMP if jumps else "",
                             cause_note=_describe_jumps(jumps, reference.called),
                             undefined=triage.undefined)


# -- undefined behaviour, unsupported programs, warnings ---------------------------------------

# What compile crashes caused by undefined values say (any crash of an unsupported program is
# excused whatever it says, so the unsupported rules need no text).
CRASH_TEXTS = {"float-to-int": ("cannot convert float", "without overflow")}
_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class SemanticTriage:
    """What the semantics triage made of a pair of runs: the verdict when it explains
    everything, else the differences that survive it, and the rules of undefined behaviour
    the program holds besides (which explain none of them)."""

    excused: tuple[Verdict, Evidence] | None
    surviving: list[cmp.Difference]
    undefined: tuple[str, ...] = ()


def semantic_triage(differences: list[cmp.Difference], eager: RunResult, compiled: RunResult,
                    call: Callable[[RunRequest], RunResult], base: RunRequest
                    ) -> SemanticTriage:
    """Excused when no difference survives the semantics triage; else the differences that
    survive: those in values no event of undefined behaviour reaches (checked in one more
    eager run, ``Variant.CHECKED``), warnings left out when something else differs too."""
    results = [d for d in differences if not semantics.is_warning_difference(d)]
    if not results:
        return SemanticTriage(_excused("warning-only", differences[0].message), [])
    if _message_only(results, eager, compiled):
        return SemanticTriage(_excused("exception-message", results[0].message), [])
    found = _checked(call, base)
    if found is None:
        return SemanticTriage(None, differences)
    causes = [found.causes(d.keys) for d in results]
    if not all(causes):
        return SemanticTriage(None, [d for d, c in zip(results, causes) if not c],
                              _rules(found.events))
    events = [found.events[i] for i in sorted(frozenset().union(*causes))]
    return SemanticTriage(_excused_by(events, "every difference lies in values it wrote or "
                                      "that were computed from them"), [])


def _checked(call: Callable[[RunRequest], RunResult],
             base: RunRequest) -> semantics.Semantics | None:
    """The events of one eager run under the semantics checker; None when there are none."""
    checked = call(replace(base, variant=Variant.CHECKED, coverage=()))
    found = checked.semantics
    if checked.failure is not None or found is None or not found.events:
        return None
    return found


def _rules(events: list[semantics.Event]) -> tuple[str, ...]:
    return tuple(sorted({event.rule for event in events}))


def nondeterminism(differences: list[cmp.Difference], first: RunResult, again: RunResult,
                   call: Callable[[RunRequest], RunResult], base: RunRequest
                   ) -> tuple[Verdict, Evidence | None]:
    """Two eager runs that disagree: ``nondeterministic``, unless the semantics triage
    explains every difference (reads of uninitialised memory differ from run to run; a
    warning emitted once per process)."""
    excused = semantic_triage(differences, first, again, call, base).excused
    return excused if excused is not None else (Verdict.NONDETERMINISTIC, None)


def excuse_crash(eager: RunResult, compiled: RunResult,
                 call: Callable[[RunRequest], RunResult], base: RunRequest) -> SemanticTriage:
    """A compile crash the program's own undefined or unsupported behaviour explains: any
    crash of an unsupported program (PyTorch does not support writes into overlapping
    memory, so the compiler refusing them is right whatever it says), or a crash that says
    so (a failed float-to-integer conversion) or points at the line of an event; else the
    crash stands (``excused`` None, with the rules of undefined behaviour the program holds
    besides)."""
    assert compiled.exception is not None
    found = _checked(call, base)
    if found is None:
        return SemanticTriage(None, [])
    message = compiled.exception.message
    lines = {(name.rpartition("/")[2], int(line)) for name, line in
             _USER_FRAME.findall(message)}
    if (innermost := _frame_line(compiled.exception.frame)) is not None:
        lines.add(innermost)
    # An unsupported program (a write into overlapping memory) may make the compiler fail
    # however it likes: raising is the intended outcome, whatever the message says. Values
    # that are undefined justify only the crashes that say so or point at their line.
    explaining = [event for event in found.events
                  if semantics.RULES[event.rule].verdict == semantics.UNSUPPORTED
                  or any(text in message for text in CRASH_TEXTS.get(event.rule, ()))
                  or _frame_line(event.frame) in lines]
    if not explaining:
        return SemanticTriage(None, [], _rules(found.events))
    return SemanticTriage(_excused_by(explaining, "the compile crash is the compiler "
                                      "refusing it"), [])


def _frame_line(frame: str) -> tuple[str, int] | None:
    """``(file name, line)`` of a ``path/file.py:LINE in function`` frame (an event's, or an
    exception's innermost user frame); None when there is none."""
    name, _, rest = frame.partition(":")
    line = rest.split(" ")[0]
    return (name.rpartition("/")[2], int(line)) if line.isdigit() else None


def _message_only(results: list[cmp.Difference], eager: RunResult,
                  compiled: RunResult) -> bool:
    """Both runs raised the same exception type, only its message differs."""
    return len(results) == 1 and results[0].kind == "exception" and (
        eager.exception is not None and compiled.exception is not None
        and eager.exception.type == compiled.exception.type)


def _excused(rule: str, note: str) -> tuple[Verdict, Evidence]:
    chosen = semantics.RULES[rule]
    return Verdict(chosen.verdict), Evidence("", cause=rule,
                                             cause_note=f"{note} ({chosen.why})")


def _excused_by(events: list[semantics.Event], how: str) -> tuple[Verdict, Evidence]:
    verdict, rule = semantics.rule_verdict(events)
    shown = "; ".join(event.describe() if event.rule == rule.name else
                      f"{event.rule}: {event.describe()}" for event in events[:3])
    more = f" (and {len(events) - 3} more)" if len(events) > 3 else ""
    return Verdict(verdict), Evidence("", cause=rule.name,
                                      cause_note=f"{shown}{more}: {how} ({rule.why})")


# -- the further runs of the numerical triage --------------------------------------------------


def _integer_jumps(floating: list[cmp.Difference], eager: RunResult, compiled: RunResult,
                   reference: RunResult, call: Callable[[RunRequest], RunResult],
                   base: RunRequest, options: cmp.CompareOptions) -> list[Jump]:
    """The integer jumps among ``floating``: only in a program that calls a rounding
    operation, and only where nudged references keep the reference's answer."""
    if not floating or not ROUNDING & set(reference.called):
        return []
    jumps = integer_jumps(floating, eager.observed, compiled.observed, reference.observed,
                          options)
    if not jumps:
        return []
    nudged = [call(replace(base, variant=Variant.REFERENCE, perturbation=i + 1, coverage=()))
              for i in range(NUDGED_REFERENCES)]
    if any(n.failure is not None or n.exception is not None or n.observed is None
           for n in nudged):
        return []
    return jumps if steady(jumps, compiled.observed, reference.observed,
                           [n.observed for n in nudged]) else []


def _describe_jumps(jumps: list[Jump], called: tuple[str, ...]) -> str:
    if not jumps:
        return ""
    count = sum(int(jump.where.sum()) for jump in jumps)
    paths = ", ".join(jump.difference.path for jump in jumps)
    ops = ", ".join(sorted(ROUNDING & set(called)))
    return (f"compiled off by whole units at {count} value{'s' if count != 1 else ''} of "
            f"{paths} where the float64 reference, unchanged by nudged inputs, equals eager "
            f"(the program calls {ops})")


def _emulation_explains(left: list[cmp.Difference], eager: RunResult, compiled: RunResult,
                        call: Callable[[RunRequest], RunResult], base: RunRequest,
                        options: cmp.CompareOptions) -> bool:
    """Inductor keeps float16/bfloat16 intermediates in float32 where eager rounds after each
    op (documented, and the most common "wrong result" report closed as expected). When the
    differing values came from low-precision code, compile once more with
    ``inductor.emulate_precision_casts``, which rounds like eager: if those values then agree
    with eager, the difference was that rounding, not a miscompilation. (Intermediates may be
    low-precision where outputs are not, so every floating finding of Inductor is re-run; the
    switch changes nothing in float32 or float64 code, whose bugs stay.)"""
    if base.settings.backend != "inductor":
        return False
    emulated = call(replace(base, variant=Variant.COMPILED, coverage=(),
                            settings=base.settings.merged(
                                {"inductor.emulate_precision_casts": True})))
    if emulated.failure is not None or emulated.exception is not None:
        return False
    remaining = {d.path for d in differ(eager, emulated, options)}
    return not any(d.path in remaining for d in left)
