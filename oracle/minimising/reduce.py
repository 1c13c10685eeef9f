"""``eqrewrite reduce``: shrink a reproducer folder to the smallest program that still fails.

A reproducer folder (``repro.py``, a copy of the oracle core, maybe ``state.pt``; see
``repro.py``) names a target file in a source tree. The minimiser copies that one file into
candidate trees and makes it smaller step by step (``reducepasses.py``): compile settings the
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
"""

from __future__ import annotations

import ast
import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from . import reducepasses as rp
from .reduceworker import GRADIENTS, layout_class
from .standalone import module_level_names as _module_level_names

WORKER = Path(__file__).with_name("reduceworker.py")
# The modules a reproducer carries (repro.VENDORED; repeated so that importing this module
# stays free of torch).
CORE = ("settings", "protocol", "compare", "records", "observe", "reference", "semantics",
        "judge", "graphbreaks", "worker", "replay")
START_TIMEOUT = 600.0  # seconds for the checking process to import torch and load the folder
DIFFERENCES = ("differences", "forward")  # the worker's screens that compared the calls
AHEAD = 4  # with parallel jobs, candidates judged ahead of the first undecided one, per job
_NEEDED = ("ROOT", "TARGET", "SETTINGS", "REQUEST", "OPTIONS")


class ReduceError(Exception):
    """A folder that is not a usable reproducer (exit 2)."""


class NotReproduced(Exception):
    """The reproducer does not fail (any more) with its verdict (exit 1)."""


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


class Kept(NamedTuple):
    """A program the screening backend kept, not yet confirmed by the full one."""

    name: str  # the pass that kept it
    text: str
    state: bool


class Reverted(Exception):
    """The full backend did not keep a program the screen had kept: the reduction went back
    to the last program it keeps, and its passes start again from there."""


class OutOfBudget(Exception):
    """Raised inside a pass when the budget is spent; the best program so far stands."""


# -- the folder ---------------------------------------------------------------------------------


def find_reproducer(folder: Path) -> Path:
    """The reproducer folder: ``folder`` itself when it holds ``repro.py``, else its one
    subfolder that does (a campaign's finding folder)."""
    if not folder.is_dir():
        raise ReduceError(f"{folder}: not a folder")
    if (folder / "repro.py").is_file():
        found = folder
    else:
        inside = sorted(p.parent for p in folder.glob("*/repro.py"))
        # ``reduced/`` is this command's own output: reducing again starts from the original.
        inside = [p for p in inside if p.name != "reduced"] or inside
        if len(inside) != 1:
            raise ReduceError(f"{folder}: no reproducer (repro.py) in it or in a subfolder"
                              if not inside else f"{folder}: several reproducers "
                              f"({', '.join(p.name for p in inside)}); name one")
        found = inside[0]
    _check_script(found / "repro.py")
    if not (found / "_eqrewrite_oracle" / "replay.py").is_file():
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


# -- the checking process -----------------------------------------------------------------------


class Checker:
    """The warm checking process: one candidate tree at a time, killed when it overstays."""

    def __init__(self, folder: Path, trees: Path, log: Path, core: Path | None = None):
        self.folder, self.trees, self.log_path, self.core = folder, trees, log, core
        self.process: subprocess.Popen[bytes] | None = None
        self.description: dict[str, Any] | None = None
        self._buffer = b""

    def launch(self) -> None:
        """Start the process unless it runs; do not wait for it to load. Call this from the
        main thread: the process dies with the thread that started it (its parent-death
        signal follows the thread), and judging threads come and go."""
        if self.process is not None and self.process.poll() is None:
            return
        self.close()
        command = [sys.executable, str(WORKER), str(self.folder), str(self.trees)]
        command += [str(self.core)] if self.core is not None else []
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        with open(self.log_path, "ab") as log:
            # A session of its own: killing the group also ends Inductor's compile workers.
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, env=env,
                                            start_new_session=True)
        self._buffer = b""
        self.description = None

    def start(self) -> dict[str, Any]:
        """Start the process (if needed) and return its description of the reproducer."""
        if self.process is not None and self.process.poll() is None and (
                self.description is not None):
            return self.description
        self.launch()
        answer = self._read(START_TIMEOUT)
        if answer is None or "ready" not in answer:
            self.close()
            raise ReduceError(f"{self.folder}: the reproducer could not be loaded: "
                              f"{(answer or {}).get('error') or self._log_tail()}")
        self.description = answer
        return answer

    def check(self, root: Path, state: bool, timeout: float, **screen: Any
              ) -> dict[str, Any] | None:
        """The worker's answer for the tree at ``root``; None when it timed out or died.
        ``eager=`` (an exception type or None) screens the candidate with one eager run;
        ``differences=`` (the finding's) rejects one that differs otherwise before the
        triage; ``backend=`` judges it with that backend instead of the reproducer's."""
        self.start()
        request = json.dumps({"root": str(root), "state": state, **screen}) + "\n"
        stdin, _ = self._pipes()
        try:
            stdin.write(request.encode())
            stdin.flush()
        except BrokenPipeError:
            self.close()
            return None
        answer = self._read(timeout)
        if answer is None:
            self.close()
        return answer

    def _read(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        _, stdout = self._pipes()
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)  # the worker writes one JSON object a line
        return answer

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The started process's stdin and stdout (both pipes: see start())."""
        assert self.process is not None
        assert self.process.stdin is not None and self.process.stdout is not None
        return self.process.stdin, self.process.stdout

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no output"
        return "\n".join(lines[-8:]) or "no output"

    def close(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        self.process.wait()
        for stream in self._pipes():
            stream.close()
        self.process = None


# -- signatures ---------------------------------------------------------------------------------


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
    def of(cls, answer: dict[str, Any]) -> Signature:
        from ..campaign.outcome import normalise_error

        crashed = answer["verdict"] == "compile-error"
        return cls(answer["verdict"], tuple(answer["exceptions"]),
                   tuple((path, kind) for path, kind, _ in answer["differences"]),
                   normalise_error(answer.get("compiled_error") or "") if crashed else "",
                   tuple(answer.get("undefined") or ()))

    def kept_by(self, answer: dict[str, Any] | None) -> bool:
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


def elements(inputs: list[dict[str, Any]]) -> int:
    return sum(item["numel"] for item in inputs)


# -- the reduction ------------------------------------------------------------------------------


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

    def add(self, name: str, answer: dict[str, Any] | None, kept: bool) -> None:
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


class Reduction:
    """One reduction: the current program and what judging its candidates cost."""

    def __init__(self, checker: Checker, scratch: Path, relative: Path, text: str,
                 budget: Budget, say: Callable[[str], None], started: float | None = None,
                 jobs: int = 1):
        self.checker, self.scratch, self.relative = checker, scratch, relative
        # One checking process per job; the first is ``checker``, the others start when the
        # first batch of candidates needs them.
        self.checkers = [checker] + [
            Checker(checker.folder, checker.trees,
                    checker.log_path.with_name(f"{checker.log_path.stem}-{i}.log"),
                    checker.core) for i in range(1, max(1, jobs))]
        self.screen_backend: str | None = None  # a cheaper backend that shows the finding
        self._pool: ThreadPoolExecutor | None = None  # judges candidates ahead (jobs > 1)
        # The checking processes idle, the one freed last first: a process that just judged
        # has the program's modules, graphs and kernels warm (handing candidates round the
        # processes in turn made -j 2 about 10 % slower than -j 1 once candidates were cheap).
        self._free: queue.Queue[Checker] = queue.LifoQueue()
        self._ahead = self.jobs  # candidates judged at once now (see _room)
        assert checker.description is not None  # the checker has been started
        self.text, self.state = text, bool(checker.description["has_state"])
        self.budget, self.say = budget, say
        self.tally = Tally()
        self.started = time.monotonic() if started is None else started
        self.timeout = budget.timeout or 600.0
        self.signature: Signature | None = None
        # The verdict the reproducer shows (reproducers written before compile crashes were
        # reduced show compiler-bug).
        self.fails: str = checker.description.get("fails", "compiler-bug")
        self.answer: dict[str, Any] | None = None
        self.base_tree: Path | None = None  # the whole source tree, when one file is not enough
        # The compile settings the finding turned out not to need (``settings``): the fields
        # changed from the reproducer's, and whether the inputs' gradients were dropped.
        self.changed: dict[str, Any] = {}
        self.no_input_grads = False
        self._settings_seen: set[tuple[str, bool, str, bool]] = set()
        self.dropped: list[str] = []  # the settings dropped, in order
        self._seen: dict[tuple[str, bool], bool] = {}
        self._count = 0
        # Deferred confirmation (see _confirm): the programs the screening backend kept since
        # the last one the full backend kept, with the pass that kept each.
        self.unconfirmed: list[Kept] = []
        self.confirmed: tuple[str, bool, dict[str, Any]] = (text, self.state, {})  # _baseline

    def finding(self) -> tuple[Signature, dict[str, Any]]:
        """The finding's signature and the current program's answer (both set by
        ``_baseline`` before any candidate is tried)."""
        assert self.signature is not None and self.answer is not None
        return self.signature, self.answer

    # -- judging --------------------------------------------------------------------------------

    @property
    def jobs(self) -> int:
        return len(self.checkers)

    @property
    def deferring(self) -> bool:
        """Whether candidates are kept on the screening backend's word, the full backend
        confirming the program every ``confirm_every`` kept ones (``_confirm``)."""
        return self.screen_backend is not None and self.budget.confirm_every > 0

    def judge(self, text: str, state: bool, checker: Checker | None = None,
              backend: str | None = None, root: Path | None = None, full: bool = False,
              layout: list[dict[str, Any]] | None = None, capped: bool = False
              ) -> dict[str, Any] | None:
        """Write ``text`` into a fresh candidate tree and judge it (on ``checker``, default
        the first): screened by one eager run, then by the cheaper backend when there is
        one, then with the reproducer's own settings (or with ``backend`` alone; or, with
        ``full``, with its own settings alone). While ``deferring``, the cheaper backend's
        answer is final. ``layout``: the inputs' layout classes (``layout_class``) the
        candidate must keep, checked before anything runs. A screen's rejection is the
        answer, marked ``screened``. ``capped``: a ``full`` judgement within the time
        budget too. Every judgement uses the settings the reduction kept (``changed``)."""
        checker = checker or self.checker
        root = root or self._tree()
        try:
            self._write_tree(text, root)
            screen: dict[str, Any] = {} if self.signature is None else {
                "eager": self.signature.exceptions[0],
                "differences": [list(d) for d in self.signature.differences]}
            screen.update(self._overrides())
            if layout is not None:
                screen["layout"] = layout
            if backend is not None:
                return checker.check(root, state, self.capped(self.timeout), backend=backend,
                                     **screen)
            if full:  # a program the eager run passed already; the result depends on it,
                screen.pop("eager", None)  # so it may overstay the time budget
                return checker.check(root, state, self.capped(self.timeout) if capped
                                     else self.timeout, **screen)
            if self.screen_backend is not None and self.signature is not None:
                answer = checker.check(root, state, self.capped(self.timeout),
                                       backend=self.screen_backend, **screen)
                if answer is not None and "error" in answer:
                    return answer if answer.get("screened") not in DIFFERENCES else {
                        **answer, "screened": "backend"}
                if answer is None or not self.signature.kept_by(answer):
                    return answer if answer is None else {**answer, "screened": "backend"}
                if self.deferring:
                    return answer
                screen.pop("eager")  # the eager run just passed
            return checker.check(root, state, self.capped(self.timeout), **screen)
        finally:
            shutil.rmtree(root, ignore_errors=True)  # the process has answered (or died)

    def _write_tree(self, text: str, root: Path) -> None:
        """A candidate tree at ``root``: the program as ``text`` (in the whole source tree
        when one file is not enough)."""
        if self.base_tree is not None:
            shutil.copytree(self.base_tree, root, ignore=shutil.ignore_patterns(
                "__pycache__", ".git"))
        target = root / self.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def _overrides(self) -> dict[str, Any]:
        """What a request says of the settings the reduction dropped."""
        overrides: dict[str, Any] = {"settings": self.changed} if self.changed else {}
        return overrides | ({"grad_inputs": False} if self.no_input_grads else {})

    def settings(self) -> dict[str, Any]:
        """The compile settings candidates are judged with: the reproducer's, less those
        dropped (a ``CompileSettings`` as a dict)."""
        assert self.checker.description is not None  # the checker has been started
        return {**self.checker.description["settings"], **self.changed}

    def probe(self) -> dict[str, Any] | None:
        """The checking process's look at the current program (``reduceworker.probe``):
        whether it draws random numbers, what its inputs are, each as a literal; None when
        it could not tell."""
        root = self._tree()
        checker = self._free.get() if self._pool is not None else self.checker
        try:
            self._write_tree(self.text, root)
            answer = checker.check(root, self.state, self.capped(self.timeout), probe=True,
                                   **self._overrides())
        finally:
            if self._pool is not None:
                self._free.put(checker)
            shutil.rmtree(root, ignore_errors=True)
        return None if answer is None or "error" in answer else answer

    def _tree(self) -> Path:
        """A new candidate tree's folder (named in the main thread: judges run in several)."""
        self._count += 1
        return self.scratch / "trees" / f"c{self._count:06d}"

    def attempt(self, name: str, text: str, state: bool | None = None,
                same_layout: bool = False) -> bool:
        """Judge a candidate; keep it (and return True) when the finding stays the same."""
        return self.first_kept(name, [(0, text)], state, same_layout) is not None

    def first_kept(self, name: str, candidates: Iterable[tuple[Any, str]],
                   state: bool | None = None, same_layout: bool = False) -> Any | None:
        """Judge ``candidates`` (``(key, text)``) in order until one keeps the finding; keep
        it and return its key (None: none did).

        With several jobs, up to ``AHEAD`` candidates per job are judged ahead of the first
        one not yet decided, each on the next checking process free, and the answers are
        read in this order: the first kept one wins, the candidates after it are dropped
        with their judgements (those not started are cancelled), as a serial run would never
        have judged them. So the program, the candidates counted and the budget spent are a
        serial run's."""
        state = self.state if state is None else state
        # The inputs' layout classes a candidate must keep: refused before anything runs.
        layout = layout_class(self.finding()[1]["inputs"]) if same_layout else None
        stream = iter(candidates)
        pending: deque[tuple[Any, str, str, Future[dict[str, Any] | None] | None]] = deque()
        judged: set[str] = set()  # the texts of the pending candidates being judged
        queued: set[str] = set()  # and of those pending (a repeat of one is "seen")
        exhausted = False
        while True:
            while not exhausted and len(judged) < self._room():
                if judged and (left := self.remaining()) is not None and left <= 0:
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
                    if not judged:
                        self._spend()  # where a serial run would stop: before judging
                    judged.add(text)
                    future = self._submit(text, state, layout)
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
                if self.deferring and len(self.unconfirmed) >= self.budget.confirm_every:
                    self._confirm(self._take_chain())
                return key

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
        return "judge" if self._defines_target(tree) else "bad"

    def _defines_target(self, tree: ast.Module) -> bool:
        assert self.checker.description is not None  # the checker has been started
        target = self.checker.description["target"]
        wanted = {str(name).split(".")[0] for name in (target.get("attribute"),
                                                       target.get("inputs")) if name}
        return wanted <= _module_level_names(tree)

    def _room(self) -> int:
        """Candidates judged at once at most (one without parallel jobs: a serial run), no
        more than ``--max-tests`` leaves. With parallel jobs the window starts at one per
        job after each candidate kept (kept ones come in runs: what was judged beyond one
        is dropped) and grows by one with each rejected one, to ``AHEAD`` per job."""
        return max(1, min(self._ahead, self.budget.max_tests - self.tally.tried))

    def _settle(self, name: str, text: str, state: bool, status: str,
                answer: dict[str, Any] | None, same_layout: bool) -> bool:
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
        if self.jobs > 1:
            self._ahead = self.jobs if kept else min(self._ahead + 1, AHEAD * self.jobs)
        if kept:
            assert answer is not None  # kept_by(None) is False
            if self.deferring:
                self.unconfirmed.append(Kept(name, text, state))
            self.text, self.state, self.answer = text, state, answer
            size = rp.size(text)
            self.say(f"{self.tally.tried} tried: {name} kept; {size.statements} statements, "
                     f"{size.tokens} tokens, {elements(answer['inputs'])} input elements")
        return kept

    def _submit(self, text: str, state: bool, layout: list[dict[str, Any]] | None = None
                ) -> Future[dict[str, Any] | None]:
        """Judge ``text``: now without parallel jobs, else on the next checking process
        free (the answer's future)."""
        root = self._tree()
        if self.jobs == 1:
            done: Future[dict[str, Any] | None] = Future()
            done.set_result(self.judge(text, state, root=root, layout=layout))
            return done
        if self._pool is None:
            for checker in self.checkers:
                checker.launch()  # from the main thread (see launch); the pool's threads
                # live as long as the reduction, so a restart from one of them is safe too
            self._pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="reduce-judge")
            for checker in self.checkers:
                self._free.put(checker)
        return self._pool.submit(self._judge_free, text, state, root, layout=layout)

    def _judge_free(self, text: str, state: bool, root: Path | None = None, full: bool = False,
                    layout: list[dict[str, Any]] | None = None, capped: bool = False
                    ) -> dict[str, Any] | None:
        checker = self._free.get()
        try:
            return self.judge(text, state, checker, root=root, full=full, layout=layout,
                              capped=capped)
        finally:
            self._free.put(checker)

    # -- deferred confirmation --------------------------------------------------------------------

    def _take_chain(self) -> list[Kept]:
        chain, self.unconfirmed = self.unconfirmed, []
        return chain

    def _confirm(self, chain: list[Kept], restart: bool = True) -> None:
        """Judge the last program of ``chain`` (kept by the screen since the last confirmed
        one) with the full backend: when it keeps the finding, the chain stands; else
        ``_revert``."""
        if not chain:
            return
        assert self.signature is not None
        if self.signature.kept_by(answer := self._full(chain[-1])):
            assert answer is not None
            self._settle_confirmed(chain[-1], answer)
        else:
            self._revert(chain, restart)

    def _revert(self, chain: list[Kept], restart: bool = True) -> None:
        """The full backend does not keep the chain's last program: find by bisection one it
        keeps (``lo``, or the last confirmed) followed by one it does not (``hi``), go back
        to ``lo``, reject ``hi`` and forget the programs after it (reduced from a rejected
        one), then raise ``Reverted`` (unless not ``restart``). Only the order of answers
        decides, so serial and parallel runs stay the same."""
        assert self.signature is not None
        lo, hi, kept_answer = -1, len(chain) - 1, None
        while hi - lo > 1:
            middle = (lo + hi) // 2
            if self.signature.kept_by(answer := self._full(chain[middle])):
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
                 f"{self.screen_backend} undone")
        if restart:
            raise Reverted

    def _full(self, kept: Kept) -> dict[str, Any] | None:
        """The full backend's answer for a program the screen kept (on a free process)."""
        self.tally.confirmations += 1
        return self._judge_apart(kept.text, kept.state)

    def _judge_apart(self, text: str, state: bool, capped: bool = False
                     ) -> dict[str, Any] | None:
        """The full backend's judgement of ``text``, outside a pass's candidates (on a free
        process: with parallel jobs, judgements ahead may still run on the others)."""
        if self._pool is None:
            return self.judge(text, state, root=self._tree(), full=True, capped=capped)
        return self._judge_free(text, state, self._tree(), full=True, capped=capped)

    def _settle_confirmed(self, kept: Kept, answer: dict[str, Any]) -> None:
        """``kept``'s program is the current one, confirmed, with the full backend's answer."""
        self.confirmed = (kept.text, kept.state, answer)
        self.text, self.state, self.answer = self.confirmed

    def close(self) -> None:
        """End the checking processes (and the judgements still running ahead)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        for checker in self.checkers:
            checker.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

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

    def _spend(self) -> None:
        if self.tally.tried >= self.budget.max_tests:
            raise OutOfBudget(f"--max-tests {self.budget.max_tests} reached")
        left = self.remaining()
        if left is not None and left <= 0:
            raise OutOfBudget(f"--time-budget {self.budget.time_budget:g}s reached")

    # -- the passes -----------------------------------------------------------------------------

    def run(self) -> str | None:
        """Reduce until no pass finds anything; the reason it stopped early, if it did.
        The program it ends with is one the full backend keeps (``_confirm``)."""
        while True:
            try:
                try:
                    self._round()
                except OutOfBudget as stop:
                    self._confirm(self._take_chain(), restart=False)
                    return str(stop)
                self._confirm(self._take_chain())
                return None
            except Reverted:
                continue

    def _round(self) -> None:
        """The passes, over and over until none changes the program, then the tidy-up."""
        if self.state:
            self.attempt("weights", self.text, state=False)
        while True:
            self.drop_settings()
            before = (self.text, self.state)
            self.statements()
            self.greedy("inputs", rp.unused_input_candidates)
            self.greedy("outputs", rp.output_candidates)
            self.greedy("members", rp.unused_member_candidates)
            self.greedy("unroll", rp.unroll_candidates)
            self.greedy("iterations", rp.iteration_candidates)
            self.greedy("hoist", rp.hoist_candidates)
            self.greedy("split", rp.break_candidates)
            self.greedy("inline", rp.inline_candidates)
            self.greedy("expressions", rp.expression_candidates)
            self.shapes()
            self.literal_inputs()
            self.greedy("constants", rp.constant_candidates)
            if (self.text, self.state) == before:
                self.attempt("tidy", rp.tidy(self.text))
                return

    def statements(self) -> None:
        """Delta debugging over each statement list, outermost first."""
        body = 0
        while body < len(lengths := rp.body_lengths(self.text)):
            base = self.text

            def first(subsets: list[list[int]], base: str = base, body: int = body
                      ) -> int | None:
                texts = ((i, rp.keep_statements(base, body, frozenset(keep)))
                         for i, keep in enumerate(subsets))
                found: int | None = self.first_kept("statements", texts)
                return found

            ddmin_first(list(range(lengths[body])), first)
            body += 1

    def greedy(self, name: str,
               candidates: Callable[[str, int], Iterator[tuple[int, str]]]) -> None:
        """Try candidates in order; after each kept one, go on from the same position."""
        start = 0
        while (position := self.first_kept(name, candidates(self.text, start))) is not None:
            start = position

    def drop_settings(self) -> None:
        """Each compile setting of the finding (a switch, the mode, ``dynamic``,
        ``fullgraph``), then the inputs' gradients, then ``inference`` (with no input
        gradients either), dropped when the finding stays without it: judged like a
        candidate, but always with the reproducer's own backend (a cheaper one ignores most
        switches). A program kept so is confirmed."""
        for name, _ in list(setting_candidates(self.settings())):
            # Made again from the settings kept so far, which an earlier one may have changed.
            change = dict(setting_candidates(self.settings())).get(name)
            if change is not None:
                self._try_settings(name, {**self.changed, **change}, self.no_input_grads)
        signature, answer = self.finding()
        needs_grads = any(path.startswith(GRADIENTS) for path, _ in signature.differences)
        if answer.get("grad_inputs") and not needs_grads and not self.no_input_grads:
            self._try_settings("gradients", self.changed, True)
        if self.settings().get("inference") and not needs_grads:
            # Grad mode on, but still no input gradients: the script needs neither.
            self._try_settings("inference", {**self.changed, "inference": False}, True)

    def _try_settings(self, name: str, changed: dict[str, Any], no_input_grads: bool) -> None:
        key = (self.text, self.state, json.dumps(changed, sort_keys=True), no_input_grads)
        if key in self._settings_seen:  # refused for this program before
            return
        self._settings_seen.add(key)
        self._spend()
        before = self.changed, self.no_input_grads
        self.changed, self.no_input_grads = changed, no_input_grads
        answer = self._judge_apart(self.text, self.state, capped=True)
        signature, _ = self.finding()
        kept = signature.kept_by(answer)
        self.tally.add("settings", answer, kept)
        if not kept:
            self.changed, self.no_input_grads = before
            return
        assert answer is not None  # kept_by(None) is False
        self.answer = answer
        self.confirmed, self.unconfirmed = (self.text, self.state, answer), []
        self.dropped.append(name)
        self.say(f"{self.tally.tried} tried: settings kept; {name} not needed")

    def literal_inputs(self) -> None:
        """The inputs written as small literals (``torch.tensor([...])``, no seed needed)
        when the finding stays with them, every input keeping its dtype, rank and layout
        class."""
        assert self.checker.description is not None  # the checker has been started
        if self.checker.description["target"]["inputs"] != "get_inputs":
            return
        found = self.probe()
        if found is None or found["container"] not in ("list", "tuple") or None in found[
                "literals"]:
            return
        candidate = rp.literal_inputs(self.text, found["literals"],
                                      found["container"] == "tuple")
        if candidate is not None:
            self.attempt("literals", candidate, same_layout=True)

    def shapes(self) -> None:
        """Shrink input dimensions, keeping every input's dtype, rank and layout class."""
        while self.first_kept("shapes", enumerate(rp.shape_candidates(self.text)),
                              same_layout=True) is not None:
            pass


# Compile settings a finding may not need, and what each is without it.
_DEFAULTS = (("mode", None), ("dynamic", None), ("fullgraph", False))


def setting_candidates(settings: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, fields changed)``: each Inductor and Dynamo switch of ``settings`` (a
    ``CompileSettings`` as a dict) dropped, then the mode, ``dynamic`` and ``fullgraph`` set
    back to their defaults."""
    for key, prefix in (("inductor_config", "inductor"), ("dynamo_config", "dynamo")):
        switches = [list(item) for item in settings.get(key) or ()]
        for name, _ in switches:
            yield f"{prefix}.{name}", {key: [item for item in switches if item[0] != name]}
    for key, default in _DEFAULTS:
        if settings.get(key, default) != default:
            yield key, {key: default}


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


# -- one folder, end to end ---------------------------------------------------------------------


@dataclass
class Result:
    """What a reduction did, for the report."""

    folder: Path
    target: str
    signature: Signature
    before: dict[str, int]
    after: dict[str, int]
    tally: Tally
    seconds: float
    stopped: str | None
    weights_dropped: bool
    reduced: Path
    minimal: Path
    verified: dict[str, int | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # why a verified script broke
    jobs: int = 1
    reducing: float = 0.0  # seconds spent on the candidates (after the baseline)
    screen_backend: str | None = None
    confirm_every: int = 0  # with a screen backend (see Budget.confirm_every)
    dropped: list[str] = field(default_factory=list)  # settings the finding does not need

    @property
    def per_minute(self) -> float:
        """Candidates judged per minute while reducing."""
        return 60 * self.tally.tried / self.reducing if self.reducing > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "target": self.target,
                "signature": {"verdict": self.signature.verdict,
                              "exceptions": list(self.signature.exceptions),
                              "differences": [list(d) for d in self.signature.differences],
                              "error": self.signature.error},
                "before": self.before, "after": self.after,
                "candidates": {"tried": self.tally.tried, "accepted": self.tally.accepted,
                               "timeouts": self.tally.timeouts, "errors": self.tally.errors,
                               "repeated": self.tally.cached, "by_pass": self.tally.by_pass,
                               "screened_eager": self.tally.screened_eager,
                               "screened_backend": self.tally.screened_backend,
                               "screened_triage": self.tally.screened_triage,
                               "screened_forward": self.tally.screened_forward,
                               "screened_layout": self.tally.screened_layout,
                               "speculative": self.tally.speculative,
                               "confirmations": self.tally.confirmations,
                               "reverted": self.tally.reverted,
                               "per_minute": round(self.per_minute, 2)},
                "settings_dropped": self.dropped,
                "jobs": self.jobs, "screen_backend": self.screen_backend,
                "confirm_every": self.confirm_every,
                "reducing_seconds": round(self.reducing, 1),
                "seconds": round(self.seconds, 1), "stopped": self.stopped,
                "weights_dropped": self.weights_dropped, "reduced": str(self.reduced),
                "minimal": str(self.minimal), "verified": self.verified,
                "errors": self.errors}


def reduce_folder(folder: Path, out: Path | None = None, budget: Budget | None = None,
                  say: Callable[[str], None] = lambda _: None, verify: bool = True,
                  jobs: int = 1) -> Result:
    """Reduce the reproducer in ``folder``; write ``minimal.py`` and ``reduced/`` to ``out``
    (default: ``folder``), judging ``jobs`` candidates at once. ReduceError for a bad folder,
    NotReproduced when it does not fail."""
    budget = budget or Budget()
    repro = find_reproducer(folder)
    out = (out or folder).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="eqrewrite-reduce-"))
    (scratch / "trees").mkdir()
    checker = Checker(repro, scratch / "trees", scratch / "worker.log")
    started = time.monotonic()
    try:
        say(f"loading {repro} (starting torch)")
        description = checker.start()
        if not description["judge"]:  # written before replay.judge existed: a newer core
            checker.close()
            checker.core = _vendor(scratch / "core")
            description = checker.start()
        relative, original = _target_file(repro, description)
        reduction = Reduction(checker, scratch, relative, original, budget, say, started,
                              jobs)
        for other in reduction.checkers[1:]:
            other.launch()  # they load torch while the baseline is judged
        baseline = _baseline(reduction, Path(description["root"]))
        say(f"reproduces: {reduction.finding()[0].describe()} ({baseline['seconds']:.1f}s)"
            + (f"; candidates screened with {reduction.screen_backend} first"
               if reduction.screen_backend else ""))
        reducing = time.monotonic()
        stopped = reduction.run()
        reducing = time.monotonic() - reducing
        signature, answer = reduction.finding()
        result = Result(
            repro, description["target"]["name"], signature,
            _sizes(original, baseline), _sizes(reduction.text, answer),
            reduction.tally, 0.0, stopped, description["has_state"] and not reduction.state,
            out / "reduced", out / "minimal.py", jobs=reduction.jobs, reducing=reducing,
            screen_backend=reduction.screen_backend,
            confirm_every=budget.confirm_every if reduction.deferring else 0,
            dropped=list(reduction.dropped))
        try:
            _write_reduced(result.reduced, repro, checker.core, reduction)
            _write_minimal(result.minimal, reduction, description, reduction.probe())
            result.seconds = time.monotonic() - started
            (result.reduced / "reduction.json").write_text(
                json.dumps(result.to_dict(), indent=1) + "\n", encoding="utf-8")
        except OSError as error:
            raise ReduceError(f"{error.filename or out}: cannot write: "
                              f"{error.strerror or error}") from None
    finally:
        checker.close()
        if "reduction" in locals():
            reduction.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if verify:
        left = reduction.remaining()
        if left is None or left >= 1.0:
            result.verified = _verify(result, reduction.timeout, left)
        else:  # the budget is spent: the reproducers are written but not run again
            result.stopped = result.stopped or f"--time-budget {budget.time_budget:g}s reached"
    return result


def _vendor(core: Path) -> Path:
    """A copy of this installation's oracle core, for folders with an older one."""
    package = core / "_eqrewrite_oracle"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A copy of eqrewrite\'s oracle core."""\n')
    for name in CORE:
        shutil.copyfile(Path(__file__).parents[1] / "core" / f"{name}.py", package / f"{name}.py")
    return core


def _target_file(repro: Path, description: dict[str, Any]) -> tuple[Path, str]:
    target = description["target"]
    if target["file"] is None:
        raise ReduceError(f"{repro}: the target {target['name']} comes from a factory; only "
                          "targets defined in a file can be reduced")
    path = Path(description["root"]) / target["file"]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ReduceError(f"{repro}/repro.py: cannot read the target's source {path}: "
                          f"{getattr(error, 'strerror', None) or error}") from None
    try:
        ast.parse(text)
    except SyntaxError as error:
        raise ReduceError(f"{path}:{error.lineno}: syntax error: {error.msg}") from None
    return Path(target["file"]), text


def _baseline(reduction: Reduction, root: Path) -> dict[str, Any]:
    """Judge the unchanged target in a tree of its own (else in its whole source tree) and
    record the finding's signature."""
    timeout = reduction.budget.timeout or START_TIMEOUT
    reduction.timeout = timeout
    answer = reduction.judge(reduction.text, reduction.state)
    if _failing(answer, reduction.fails) is not None and root.is_dir():
        whole = reduction.checker.check(root, reduction.state, reduction.capped(timeout))
        if _failing(whole, reduction.fails) is None:
            reduction.base_tree = root
            answer = reduction.judge(reduction.text, reduction.state)
        elif answer is None or "error" in answer:
            answer = whole
    problem = _failing(answer, reduction.fails)
    if problem is not None:
        raise NotReproduced(f"{reduction.checker.folder}: {problem}")
    assert answer is not None  # _failing(None) is not None
    reduction.signature, reduction.answer = Signature.of(answer), answer
    reduction.confirmed = (reduction.text, reduction.state, answer)
    reduction.timeout = reduction.budget.timeout or max(60.0, 5 * answer["seconds"])
    reduction.screen_backend = _cheaper_backend(reduction)
    return answer


# Backends that judge a candidate more cheaply than Inductor (no code generation), tried in
# this order: the first with which the original shows its finding screens every candidate.
CHEAPER = {"inductor": ("aot_eager",)}


def _cheaper_backend(reduction: Reduction) -> str | None:
    """A backend cheaper than the reproducer's with which the unchanged program fails the
    same way (a Dynamo or AOT autograd bug does not need Inductor), or None."""
    assert reduction.checker.description is not None and reduction.signature is not None
    backend = reduction.checker.description["settings"]["backend"]
    for cheaper in CHEAPER.get(backend, ()):
        answer = reduction.judge(reduction.text, reduction.state, backend=cheaper)
        if answer is not None and "screened" not in answer and reduction.signature.kept_by(
                answer):
            return cheaper
    return None


def _failing(answer: dict[str, Any] | None, fails: str = "compiler-bug") -> str | None:
    """None when ``answer`` has the reproducer's verdict ``fails``, else why it does not
    fail."""
    if answer is None:
        return "the reproducer timed out or crashed"
    if "error" in answer:
        return f"the reproducer could not run: {answer['error'].splitlines()[-1]}"
    if answer["verdict"] != fails:
        return f"does not reproduce: the verdict is {answer['verdict']} ({answer['detail']})"
    return None


def _sizes(text: str, answer: dict[str, Any]) -> dict[str, int]:
    size = rp.size(text)
    return {"statements": size.statements, "tokens": size.tokens,
            "input_elements": elements(answer["inputs"])}


def _write_reduced(destination: Path, repro: Path, core: Path | None,
                   reduction: Reduction) -> None:
    """A reproducer folder in the original's format, whose tree is ``tree/`` beside it."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".reduced-", dir=destination.parent))
    shutil.copytree((core or repro) / "_eqrewrite_oracle", building / "_eqrewrite_oracle",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if reduction.state:
        shutil.copyfile(repro / "state.pt", building / "state.pt")
    tree = building / "tree"
    if reduction.base_tree is not None:
        shutil.copytree(reduction.base_tree, tree,
                        ignore=shutil.ignore_patterns("__pycache__", ".git"))
    (tree / reduction.relative).parent.mkdir(parents=True, exist_ok=True)
    (tree / reduction.relative).write_text(reduction.text, encoding="utf-8")
    script = _rooted_here((repro / "repro.py").read_text(encoding="utf-8"))
    (building / "repro.py").write_text(_with_settings(script, reduction), encoding="utf-8")
    old = destination.with_name(f".{destination.name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if destination.exists():
        destination.rename(old)
    building.rename(destination)
    shutil.rmtree(old, ignore_errors=True)


def _rooted_here(script: str) -> str:
    """``repro.py`` with its source tree moved to ``tree/`` inside its own folder."""
    return _assigned(script, "ROOT", 'ROOT = str(Path(__file__).resolve().parent / "tree")\n')


def _with_settings(script: str, reduction: Reduction) -> str:
    """``repro.py`` judging with the settings the reduction kept: ``SETTINGS`` without those
    the finding does not need, and no input gradients when it needs none."""
    if reduction.changed:
        fields = {key: tuple(map(tuple, value)) if key.endswith("_config") else value
                  for key, value in reduction.settings().items()}
        script = _assigned(script, "SETTINGS", "SETTINGS = CompileSettings("
                           + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")\n")
    if reduction.no_input_grads:
        script = _assigned(script, "REQUEST", "import dataclasses  # noqa: E402\n\n"
                           "# The finding needs no input gradients.\n"
                           "REQUEST = dataclasses.replace(REQUEST, grad_inputs=False)\n",
                           after=True)
    return script


def _assigned(script: str, name: str, text: str, after: bool = False) -> str:
    """``script`` with the top-level statement assigning ``name`` replaced by ``text``, or
    with ``text`` added after it."""
    node = next(n for n in ast.parse(script).body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))
    lines = script.splitlines(keepends=True)
    end = node.end_lineno or node.lineno
    if after:
        return "".join(lines[:end] + [text] + lines[end:])
    return "".join(lines[:node.lineno - 1] + [text] + lines[end:])


def _write_minimal(path: Path, reduction: Reduction, description: dict[str, Any],
                   probe: dict[str, Any] | None) -> None:
    """``minimal.py`` for the reduced program, with the settings the reduction kept and, from
    ``probe``, whether it needs the seed and how its inputs are passed."""
    from eqrewrite.rewriter.api import write_atomic

    from .standalone import Recipe, minimal_script, uses_reference

    signature, answer = reduction.finding()
    if signature.differences:
        first = signature.differences[0]
        message = next(m for p, k, m in answer["differences"] if (p, k) == first)
    else:  # a compile crash: the compiled run raises
        message = answer["detail"]
    recipe = Recipe(
        target=description["target"], settings=reduction.settings(),
        seed=description["seed"], grad_inputs=answer["grad_inputs"],
        grads=any("['grads']" in path for path, _ in signature.differences),
        strict=description["strict"], scale=description["scale"],
        extra_paths=tuple(description["extra_paths"]),
        state="reduced/state.pt" if reduction.state else None, headline=message,
        torch_version=description["torch"], differences=signature.differences,
        reference=uses_reference([kind for _, kind in signature.differences],
                                 answer.get("detail", "")),
        seeded=probe is None or bool(probe["rng"]),
        container=probe["container"] if probe is not None else None)
    write_atomic(path, minimal_script(reduction.text, recipe).encode("utf-8"))


def _verify(result: Result, timeout: float, left: float | None = None) -> dict[str, int | None]:
    """Run the reduced reproducer and minimal.py on their own: exit 1 means they fail;
    within ``left`` seconds when the time budget leaves only that (None: timed out). What
    made one exit otherwise than 0 or 1 (minimal.py's 2: the script is broken) goes to
    ``result.errors``."""
    runs = {"reduced/repro.py": (result.reduced / "repro.py", result.reduced),
            "minimal.py": (result.minimal, result.minimal.parent)}
    logs = {name: tempfile.TemporaryFile() for name in runs}
    started = {name: subprocess.Popen([sys.executable, str(script)], cwd=cwd,
                                      stdout=subprocess.DEVNULL, stderr=logs[name],
                                      start_new_session=True)
               for name, (script, cwd) in runs.items()}
    codes: dict[str, int | None] = {}
    allowed = max(300.0, 3 * timeout)
    deadline = time.monotonic() + (allowed if left is None else min(allowed, left))
    for name, process in started.items():
        try:
            codes[name] = process.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            codes[name] = None
        with logs[name] as log:
            log.seek(0)
            if codes[name] not in (0, 1, None):
                result.errors[name] = _why(log.read().decode(errors="replace"))
    return codes


def _why(stderr: str) -> str:
    """Why a script exited otherwise than 0 or 1: the line minimal.py writes when it is
    broken, else the last line of its error output."""
    from .standalone import BROKEN

    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(BROKEN)]
    if said:
        return said[-1].partition(": ")[2] or said[-1]
    return lines[-1] if lines else "no output"
