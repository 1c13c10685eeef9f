"""The minimiser's passes and their order (``Passes``): compile settings dropped, delta
debugging over statement lists, then one pass per kind of candidate of ``candidates/``, over
and over until none changes the program, then the tidy-up.

Each pass asks a ``Scheduler`` for the first candidate that keeps the finding; once the
scheduler is halted (budget spent, or kept programs undone by the full backend) the passes
end, and ``run`` either stops or starts them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from ..formats import SettingsRecord
from . import candidates as rp
from .reduceworker import GRADIENTS
from .schedule import Scheduler

Candidates = Callable[[str, int], Iterator[tuple[int, str]]]  # (text, start) -> (key, text)
# The greedy passes in their order, each over the program as the one before left it.
GREEDY: tuple[tuple[str, Candidates], ...] = (
    ("inputs", rp.unused_input_candidates), ("outputs", rp.output_candidates),
    ("members", rp.unused_member_candidates), ("unroll", rp.unroll_candidates),
    ("iterations", rp.iteration_candidates), ("hoist", rp.hoist_candidates),
    ("split", rp.break_candidates), ("inline", rp.inline_candidates),
    ("expressions", rp.expression_candidates))


class Passes:
    """The passes over one scheduler's program."""

    def __init__(self, schedule: Scheduler):
        self.schedule = schedule

    def run(self) -> str | None:
        """Reduce until no pass finds anything; the reason it stopped early, if it did.
        The program it ends with is one the full backend keeps (``Scheduler.confirm``)."""
        schedule = self.schedule
        while True:
            schedule.reverted = False
            self._round()
            if schedule.stopped is not None:
                schedule.confirm(schedule.take_chain(), restart=False)
                return schedule.stopped
            if not schedule.reverted and schedule.confirm(schedule.take_chain()):
                return None

    def _round(self) -> None:
        """The passes, over and over until none changes the program, then the tidy-up."""
        schedule = self.schedule
        if schedule.state:
            schedule.attempt("weights", schedule.text, state=False)
        while True:
            self.drop_settings()
            before = (schedule.text, schedule.state)
            for step in self._steps():
                step()
                if schedule.halted:
                    return
            if (schedule.text, schedule.state) == before:
                schedule.attempt("tidy", rp.tidy(schedule.text))
                return

    def _steps(self) -> list[Callable[[], None]]:
        """The passes of one round after the settings, in their order."""
        greedy = [partial(self.greedy, name, candidates) for name, candidates in GREEDY]
        return [self.statements, *greedy, self.shapes, self.literal_inputs,
                partial(self.greedy, "constants", rp.constant_candidates)]

    def statements(self) -> None:
        """Delta debugging over each statement list, outermost first."""
        schedule = self.schedule
        body = 0
        while not schedule.halted and body < len(lengths := rp.body_lengths(schedule.text)):
            base = schedule.text

            def first(subsets: list[list[int]], base: str = base, body: int = body
                      ) -> int | None:
                texts = ((i, rp.keep_statements(base, body, frozenset(keep)))
                         for i, keep in enumerate(subsets))
                found: int | None = schedule.first_kept("statements", texts)
                return found

            ddmin_first(list(range(lengths[body])), first)
            body += 1

    def greedy(self, name: str, candidates: Candidates) -> None:
        """Try candidates in order; after each kept one, go on from the same position."""
        start = 0
        while (position := self.schedule.first_kept(
                name, candidates(self.schedule.text, start))) is not None:
            start = position

    def drop_settings(self) -> None:
        """Each compile setting of the finding (a switch, the mode, ``dynamic``,
        ``fullgraph``), then the inputs' gradients, then ``inference`` (with no input
        gradients either), dropped when the finding stays without it: judged like a
        candidate, but always with the reproducer's own backend (a cheaper one ignores most
        switches). A program kept so is confirmed."""
        schedule, judge = self.schedule, self.schedule.judge
        for name, _ in list(setting_candidates(judge.settings())):
            # Made again from the settings kept so far, which an earlier one may have changed.
            change = dict(setting_candidates(judge.settings())).get(name)
            if change is not None:
                schedule.try_settings(name, {**judge.changed, **change}, judge.no_input_grads)
        signature, answer = schedule.finding()
        needs_grads = any(path.startswith(GRADIENTS) for path, _ in signature.differences)
        if answer.get("grad_inputs") and not needs_grads and not judge.no_input_grads:
            schedule.try_settings("gradients", judge.changed, True)
        if judge.settings().get("inference") and not needs_grads:
            # Grad mode on, but still no input gradients: the script needs neither.
            schedule.try_settings("inference", {**judge.changed, "inference": False}, True)

    def literal_inputs(self) -> None:
        """The inputs written as small literals (``torch.tensor([...])``, no seed needed)
        when the finding stays with them, every input keeping its dtype, rank and layout
        class."""
        schedule = self.schedule
        if schedule.judge.description["target"]["inputs"] != "get_inputs":
            return
        found = schedule.judge.probe(schedule.text, schedule.state)
        if found is None or found["container"] not in ("list", "tuple"):
            return
        literals = [literal for literal in found["literals"] if literal is not None]
        if len(literals) < len(found["literals"]):  # an input with no literal
            return
        candidate = rp.literal_inputs(schedule.text, literals, found["container"] == "tuple")
        if candidate is not None:
            schedule.attempt("literals", candidate, same_layout=True)

    def shapes(self) -> None:
        """Shrink input dimensions, keeping every input's dtype, rank and layout class."""
        while self.schedule.first_kept("shapes", enumerate(rp.shape_candidates(
                self.schedule.text)), same_layout=True) is not None:
            pass


def setting_candidates(settings: SettingsRecord) -> Iterator[tuple[str, SettingsRecord]]:
    """``(name, fields changed)``: each Inductor and Dynamo switch of ``settings`` dropped,
    then the mode, ``dynamic`` and ``fullgraph`` set back to their defaults."""
    for prefix, table in (("inductor", settings.get("inductor_config")),
                          ("dynamo", settings.get("dynamo_config"))):
        switches = [list(item) for item in table or ()]
        for name, _ in switches:
            kept = [item for item in switches if item[0] != name]
            yield f"{prefix}.{name}", ({"inductor_config": kept} if prefix == "inductor"
                                       else {"dynamo_config": kept})
    if settings.get("mode") is not None:
        yield "mode", {"mode": None}
    if settings.get("dynamic") is not None:
        yield "dynamic", {"dynamic": None}
    if settings.get("fullgraph", False) is not False:
        yield "fullgraph", {"fullgraph": False}


def ddmin(items: list[int], test: Callable[[list[int]], bool]) -> list[int]:
    """Zeller's delta debugging: a 1-minimal subset of ``items`` that passes ``test`` (which
    ``items`` itself is assumed to pass): subsets first, then complements, then finer."""
    return ddmin_first(items, lambda subsets: next(
        (i for i, subset in enumerate(subsets) if test(subset)), None))


def ddmin_first(items: list[int], first: Callable[[list[list[int]]], int | None]
                ) -> list[int]:
    """``ddmin`` asking for each round's tests at once: ``first(subsets)`` is the index of
    the first subset that passes, in order (None: none), so that a caller may judge several
    at a time and still get the serial answer."""
    granularity = 2
    while len(items) >= 2:
        chunks = [items[i * len(items) // granularity:(i + 1) * len(items) // granularity]
                  for i in range(granularity)]
        # With two chunks, subsets and complements are the same tests: complements only.
        subsets = chunks if granularity > 2 else []
        complements = [[item for item in items if item not in chunk] for chunk in chunks]
        found = first(subsets + complements)
        if found is not None and found < len(subsets):
            items, granularity = subsets[found], 2
        elif found is not None:
            items, granularity = complements[found - len(subsets)], max(granularity - 1, 2)
        else:
            if granularity >= len(items):
                break
            granularity = min(2 * granularity, len(items))
    if len(items) == 1 and first([[]]) == 0:
        return []
    return items
