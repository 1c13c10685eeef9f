"""Which candidates the minimiser judges, in which order, and which it keeps (``Scheduler``):
the current program, candidates judged speculatively ahead in a pass's order, and
confirmation of what a cheaper screen kept by bisection.

It takes a ``Judge`` and answers with values: ``first_kept`` returns the key of the
candidate kept (None: none), ``confirm`` whether the full backend keeps the chain. When the
budget is spent (``stopped`` says why) or the full backend refused a program the screen
kept (``reverted``: the reduction went back to the last program it keeps), the scheduler is
``halted``: it judges nothing more, so the passes end, and the pass order decides what next.
"""

from __future__ import annotations

import ast
import json
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, NamedTuple

from ..formats import Answer, SettingsRecord
from . import candidates as rp
from .judge import Judge
from .reduceworker import layout_class
from .signature import Signature, Tally, elements

AHEAD = 4  # with parallel jobs, candidates judged ahead of the first undecided one, per job


class Kept(NamedTuple):
    """A program the screening backend kept, not yet confirmed by the full one."""

    name: str  # the pass that kept it
    text: str
    state: bool


class Scheduler:
    """The current program, and what judging its candidates cost."""

    def __init__(self, judge: Judge, text: str, say: Callable[[str], None]):
        self.judge, self.say, self.clock = judge, say, judge.clock
        self.text, self.state = text, bool(judge.description["has_state"])
        self.tally = Tally()
        self.answer: Answer | None = None
        self._ahead = judge.jobs  # candidates judged at once now (see _room)
        self._settings_seen: set[tuple[str, bool, str, bool]] = set()
        self.dropped: list[str] = []  # the settings dropped, in order
        self._seen: dict[tuple[str, bool], bool] = {}
        # Deferred confirmation (see confirm): the programs the screening backend kept since
        # the last one the full backend kept, with the pass that kept each.
        self.unconfirmed: list[Kept] = []
        self.confirmed: tuple[str, bool, Answer] = (text, self.state, {})  # the baseline's
        self.stopped: str | None = None  # why the budget allows no more candidates
        self.reverted = False  # kept programs were undone: the passes start again

    @property
    def halted(self) -> bool:
        """Whether the passes must stop: the budget is spent, or kept programs were undone."""
        return self.stopped is not None or self.reverted

    def finding(self) -> tuple[Signature, Answer]:
        """The finding's signature and the current program's answer (both set by the
        baseline before any candidate is tried)."""
        assert self.judge.signature is not None and self.answer is not None
        return self.judge.signature, self.answer

    def settle_baseline(self, answer: Answer) -> None:
        """The unchanged program's answer: the finding's signature, confirmed."""
        self.judge.signature, self.answer = Signature.of(answer), answer
        self.confirmed = (self.text, self.state, answer)

    # -- candidates in a pass's order ----------------------------------------------------------

    def attempt(self, name: str, text: str, state: bool | None = None,
                same_layout: bool = False) -> bool:
        """Judge a candidate; keep it (and return True) when the finding stays the same."""
        return self.first_kept(name, [(0, text)], state, same_layout) is not None

    def first_kept(self, name: str, candidates: Iterable[tuple[Any, str]],
                   state: bool | None = None, same_layout: bool = False) -> Any | None:
        """Judge ``candidates`` (``(key, text)``) in order until one keeps the finding; keep
        it and return its key (None: none did, or the scheduler is ``halted``).

        With several jobs, up to ``AHEAD`` candidates per job are judged ahead of the first
        one not yet decided, each on the next checking process free, and the answers are
        read in this order: the first kept one wins, the candidates after it are dropped
        with their judgements (those not started are cancelled), as a serial run would never
        have judged them. So the program, the candidates counted and the budget spent are a
        serial run's."""
        if self.halted:
            return None
        state = self.state if state is None else state
        # The inputs' layout classes a candidate must keep: refused before anything runs.
        layout = layout_class(self.finding()[1]["inputs"]) if same_layout else None
        stream = iter(candidates)
        pending: deque[tuple[Any, str, str, Future[Answer | None] | None]] = deque()
        judged: set[str] = set()  # the texts of the pending candidates being judged
        queued: set[str] = set()  # and of those pending (a repeat of one is "seen")
        exhausted = False
        while True:
            while not exhausted and len(judged) < self._room():
                if judged and (left := self.clock.remaining()) is not None and left <= 0:
                    break  # no more ahead; the budget stops the pass at the next one
                item = next(stream, None)
                if item is None:
                    exhausted = True
                    break
                key, text = item
                status = self._status(text, state, queued)
                if status != "judge" and not judged:  # nothing ahead of it: settled now
                    self._settle(name, text, state, status, None, same_layout)
                    continue
                future = None
                if status == "judge":
                    # Where a serial run would stop: before judging, nothing ahead.
                    if not judged and self._spent():
                        return None
                    judged.add(text)
                    future = self.judge.submit(text, state, layout)
                queued.add(text)
                pending.append((key, text, status, future))
            if not pending:
                return None
            key, text, status, future = pending.popleft()
            if status != "seen":  # a repeat leaves its first in place (settled already)
                judged.discard(text)
                queued.discard(text)
            answer = future.result() if future is not None else None
            if self._settle(name, text, state, status, answer, same_layout):
                self.tally.speculative += sum(f is not None and not f.cancel()
                                              for *_, f in pending)
                if self.judge.deferring and len(self.unconfirmed) >= (
                        self.clock.budget.confirm_every) and not self.confirm(self.take_chain()):
                    return None  # undone: the passes start again
                return key

    def _spent(self) -> bool:
        """Whether the budget allows no more candidates (then ``stopped`` says why)."""
        self.stopped = self.clock.spent(self.tally.tried)
        return self.stopped is not None

    def _status(self, text: str, state: bool, queued: set[str]) -> str:
        """``seen`` (judged before, queued before it, or the current program), ``bad`` (not
        Python) or ``judge``."""
        if (text, state) in self._seen or (text == self.text and state == self.state) or (
                text in queued):
            return "seen"
        try:
            tree = ast.parse(text)
        except SyntaxError:  # libcst prints what it is given; nothing to judge
            return "bad"
        # A candidate that no longer defines the target cannot show the finding, whatever a
        # judge answers (a campaign's reduction once kept an empty file).
        return "judge" if self.judge.defines_target(tree) else "bad"

    def _room(self) -> int:
        """Candidates judged at once at most (one without parallel jobs: a serial run), no
        more than ``--max-tests`` leaves. With parallel jobs the window starts at one per
        job after each candidate kept (kept ones come in runs: what was judged beyond one
        is dropped) and grows by one with each rejected one, to ``AHEAD`` per job."""
        return max(1, min(self._ahead, self.clock.budget.max_tests - self.tally.tried))

    def _settle(self, name: str, text: str, state: bool, status: str,
                answer: Answer | None, same_layout: bool) -> bool:
        """Count one candidate in order, as a serial run would; keep it when its answer
        keeps the finding (and return True)."""
        key = (text, state)
        if status == "seen":
            self.tally.cached += 1
            return False
        if status == "bad":
            self._seen[key] = False
            return False
        signature, current = self.finding()
        kept = answer is not None and signature.kept_by(answer) and not (
            same_layout and layout_class(answer["inputs"]) != layout_class(current["inputs"]))
        self._seen[key] = kept
        self.tally.add(name, answer, kept)
        if self.judge.jobs > 1:
            self._ahead = (self.judge.jobs if kept
                           else min(self._ahead + 1, AHEAD * self.judge.jobs))
        if kept:
            assert answer is not None  # kept_by(None) is False
            if self.judge.deferring:
                self.unconfirmed.append(Kept(name, text, state))
            self.text, self.state, self.answer = text, state, answer
            size = rp.size(text)
            self.say(f"{self.tally.tried} tried: {name} kept; {size.statements} statements, "
                     f"{size.tokens} tokens, {elements(answer['inputs'])} input elements")
        return kept

    # -- settings ------------------------------------------------------------------------------

    def try_settings(self, name: str, changed: SettingsRecord, no_input_grads: bool) -> None:
        """Judge the current program without a setting (``changed`` fields, input gradients
        or not) with the full backend; keep the settings when the finding stays."""
        key = (self.text, self.state, json.dumps(changed, sort_keys=True), no_input_grads)
        if self.halted or key in self._settings_seen:  # refused for this program before
            return
        self._settings_seen.add(key)
        if self._spent():
            return
        before = self.judge.changed, self.judge.no_input_grads
        self.judge.changed, self.judge.no_input_grads = changed, no_input_grads
        answer = self.judge.judge_apart(self.text, self.state, capped=True)
        signature, _ = self.finding()
        kept = signature.kept_by(answer)
        self.tally.add("settings", answer, kept)
        if not kept:
            self.judge.changed, self.judge.no_input_grads = before
            return
        assert answer is not None  # kept_by(None) is False
        self.answer = answer
        self.confirmed, self.unconfirmed = (self.text, self.state, answer), []
        self.dropped.append(name)
        self.say(f"{self.tally.tried} tried: settings kept; {name} not needed")

    # -- deferred confirmation -----------------------------------------------------------------

    def take_chain(self) -> list[Kept]:
        """The programs kept since the last confirmed one, the list left empty."""
        chain, self.unconfirmed = self.unconfirmed, []
        return chain

    def confirm(self, chain: list[Kept], restart: bool = True) -> bool:
        """Judge the last program of ``chain`` (kept by the screen since the last confirmed
        one) with the full backend: when it keeps the finding, the chain stands (True);
        else ``_revert`` (False), and with ``restart`` the scheduler is ``reverted``."""
        if not chain:
            return True
        signature, _ = self.finding()
        if signature.kept_by(answer := self._full(chain[-1])):
            assert answer is not None
            self._settle_confirmed(chain[-1], answer)
            return True
        self._revert(chain)
        if restart:
            self.reverted = True
        return False

    def _revert(self, chain: list[Kept]) -> None:
        """The full backend does not keep the chain's last program: find by bisection one it
        keeps (``lo``, or the last confirmed) followed by one it does not (``hi``), go back
        to ``lo``, reject ``hi`` and forget the programs after it (reduced from a rejected
        one). Only the order of answers decides, so serial and parallel runs stay the
        same."""
        signature, _ = self.finding()
        lo, hi, kept_answer = -1, len(chain) - 1, None
        while hi - lo > 1:
            middle = (lo + hi) // 2
            if signature.kept_by(answer := self._full(chain[middle])):
                lo, kept_answer = middle, answer
            else:
                hi = middle
        self._seen[(chain[hi].text, chain[hi].state)] = False
        for later in chain[hi + 1:]:
            self._seen.pop((later.text, later.state), None)
        self.tally.reverted += len(chain) - hi
        if lo >= 0:
            assert kept_answer is not None
            self._settle_confirmed(chain[lo], kept_answer)
        else:
            self.text, self.state, self.answer = self.confirmed
        self.say(f"{self.tally.tried} tried: the full backend does not keep the finding "
                 f"after a {chain[hi].name} candidate; {len(chain) - hi} kept by "
                 f"{self.judge.screen_backend} undone")

    def _full(self, kept: Kept) -> Answer | None:
        """The full backend's answer for a program the screen kept (on a free process)."""
        self.tally.confirmations += 1
        return self.judge.judge_apart(kept.text, kept.state)

    def _settle_confirmed(self, kept: Kept, answer: Answer) -> None:
        """``kept``'s program is the current one, confirmed, with the full backend's answer."""
        self.confirmed = (kept.text, kept.state, answer)
        self.text, self.state, self.answer = self.confirmed
