"""What a reduction may spend (``Budget``: candidates, seconds per candidate, seconds in all)
and what is left of it as it runs (``Clock``)."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Budget:
    """How much the minimiser may spend: candidates judged, seconds per candidate, in all."""

    max_tests: int = 500
    timeout: float | None = None      # per candidate; None: 5 x the baseline, at least 60 s
    time_budget: float | None = None  # for the whole command: start-up, candidates, check
    # With a cheaper screening backend: confirm the program with the full one after this
    # many candidates kept by the screen (and at the end); 0: judge every candidate fully.
    # Seldom is cheaper: programs refused midway are often made good by later candidates
    # (docs/minimising.md has the measurements).
    confirm_every: int = 16


class Clock:
    """The budget against the time since the command started."""

    def __init__(self, budget: Budget, started: float | None = None):
        self.budget = budget
        self.started = time.monotonic() if started is None else started

    def remaining(self) -> float | None:
        """Seconds left of ``--time-budget`` (None: no budget)."""
        if self.budget.time_budget is None:
            return None
        return self.budget.time_budget - (time.monotonic() - self.started)

    def capped(self, timeout: float) -> float:
        """``timeout`` cut to what is left of the budget, so that a candidate judged near
        its end cannot overstay it (it is then rejected as timed out)."""
        left = self.remaining()
        return timeout if left is None else max(1.0, min(timeout, left))

    def spent(self, tried: int) -> str | None:
        """Why no further candidate may be judged after ``tried`` of them (None: it may)."""
        if tried >= self.budget.max_tests:
            return f"--max-tests {self.budget.max_tests} reached"
        left = self.remaining()
        if left is not None and left <= 0:
            return f"--time-budget {self.budget.time_budget:g}s reached"
        return None
