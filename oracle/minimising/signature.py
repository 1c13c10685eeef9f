"""What makes a candidate the same finding (``Signature``), and what judging candidates
came to (``Tally``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..campaign.outcome import normalise_error
from ..formats import Answer, InputRecord


@dataclass(frozen=True)
class Signature:
    """What makes a finding the same finding: the verdict, the exceptions of both sides, and
    the differences (``(path, kind)``), the first of which must stay; for a compile crash,
    the compiled run's error with numbers, names and paths masked. ``undefined``: the rules
    of undefined behaviour the program holds besides (the semantics triage's); a candidate
    may lose them, never gain one (a reduction never makes distinct indices duplicates)."""

    verdict: str
    exceptions: tuple[str | None, str | None]
    differences: tuple[tuple[str, str], ...]
    error: str = ""
    undefined: tuple[str, ...] = ()

    @classmethod
    def of(cls, answer: Answer) -> Signature:
        crashed = answer["verdict"] == "compile-error"
        eager, compiled = answer["exceptions"]
        return cls(answer["verdict"], (eager, compiled),
                   tuple((path, kind) for path, kind, _ in answer["differences"]),
                   normalise_error(answer.get("compiled_error") or "") if crashed else "",
                   tuple(answer.get("undefined") or ()))

    def kept_by(self, answer: Answer | None) -> bool:
        if answer is None or "error" in answer:
            return False
        other = Signature.of(answer)
        if other.verdict != self.verdict or other.exceptions != self.exceptions:
            return False
        if not set(other.undefined) <= set(self.undefined):
            return False
        if self.verdict == "compile-error":
            return other.error == self.error
        return (bool(other.differences) and self.differences[0] in other.differences
                and set(other.differences) <= set(self.differences))

    def describe(self) -> str:
        if self.verdict == "compile-error":
            return f"{self.verdict}: compiled raised {self.error}"
        path, kind = self.differences[0] if self.differences else ("result", "?")
        thrown = " / ".join(e.rpartition(".")[2] if e else "no exception"
                            for e in self.exceptions)
        more = f" (+{len(self.differences) - 1} more)" if len(self.differences) > 1 else ""
        return f"{self.verdict}: {kind} at {path}{more}; raised {thrown}"


def elements(inputs: list[InputRecord]) -> int:
    """The inputs' elements, in all: how large a program's inputs are."""
    return sum(item["numel"] for item in inputs)


@dataclass
class Tally:
    """Candidates judged, by outcome."""

    tried: int = 0
    accepted: int = 0
    timeouts: int = 0
    errors: int = 0
    cached: int = 0
    by_pass: dict[str, list[int]] = field(default_factory=dict)  # pass -> [tried, accepted]
    screened_eager: int = 0    # rejected by the one eager run, nothing compiled
    screened_backend: int = 0  # rejected by the cheaper backend, the full one not compiled
    screened_triage: int = 0   # other differences: rejected before the triage ran
    screened_forward: int = 0  # ... found before the compiled backward (never compiled)
    screened_layout: int = 0   # shrunk inputs that changed layout class: built, never run
    speculative: int = 0       # judged ahead in parallel, then dropped (not in ``tried``)
    confirmations: int = 0     # programs judged by the full backend after the screen kept them
    reverted: int = 0          # kept by the screen, undone because the full backend did not

    def add(self, name: str, answer: Answer | None, kept: bool) -> None:
        self.tried += 1
        self.accepted += kept
        self.timeouts += answer is None
        self.errors += answer is not None and "error" in answer
        counts = self.by_pass.setdefault(name, [0, 0])
        counts[0] += 1
        counts[1] += kept
        screen = (answer or {}).get("screened")
        self.screened_eager += screen == "eager"
        self.screened_backend += screen == "backend"
        self.screened_triage += screen == "differences"
        self.screened_forward += screen == "forward"
        self.screened_layout += screen == "layout"
