"""``eqrewrite reduce``: shrink a reproducer folder to the smallest program that still fails.

A reproducer folder (``repro.py``, a copy of the oracle core, maybe ``state.pt``; see
``repro.py``) names a target file in a source tree. The minimiser copies that one file into
candidate trees and makes it smaller step by step (``reducepasses.py``): delta debugging over
every statement list, unread ``forward`` and ``__init__`` parameters removed with their
inputs, unread members removed, loops that run once unrolled, compound statements replaced
by a block, expressions by an operand, numbers by simpler ones, input dimensions shrunk.
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

Candidates that time out, crash or raise in the oracle are rejected, and one eager run
first rejects, without compiling, those whose eager run raises what the original's did not
(most removed statements leave a name undefined). The order of candidates is fixed, so a run
is deterministic up to time limits. The result is written next to the
folder: ``reduced/`` (a reproducer folder in the same format, with the reduced file in
``reduced/tree/``) and ``minimal.py`` (``standalone.py``: one script, torch only).
"""

from __future__ import annotations

import ast
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import reducepasses as rp

WORKER = Path(__file__).with_name("reduceworker.py")
# The modules a reproducer carries (repro.VENDORED; repeated so that importing this module
# stays free of torch).
CORE = ("settings", "protocol", "compare", "records", "observe", "reference", "judge",
        "graphbreaks", "worker", "replay")
START_TIMEOUT = 600.0  # seconds for the checking process to import torch and load the folder
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

    def start(self) -> dict[str, Any]:
        """Start the process (if needed) and return its description of the reproducer."""
        if self.process is not None and self.process.poll() is None:
            assert self.description is not None  # a running process has answered "ready"
            return self.description
        command = [sys.executable, str(WORKER), str(self.folder), str(self.trees)]
        command += [str(self.core)] if self.core is not None else []
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        with open(self.log_path, "ab") as log:
            # A session of its own: killing the group also ends Inductor's compile workers.
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, env=env,
                                            start_new_session=True)
        self._buffer = b""
        answer = self._read(START_TIMEOUT)
        if answer is None or "ready" not in answer:
            self.close()
            raise ReduceError(f"{self.folder}: the reproducer could not be loaded: "
                              f"{(answer or {}).get('error') or self._log_tail()}")
        self.description = answer
        return answer

    def check(self, root: Path, state: bool, timeout: float, **screen: str | None
              ) -> dict[str, Any] | None:
        """The worker's answer for the tree at ``root``; None when it timed out or died.
        ``eager=`` (an exception type or None) screens the candidate with one eager run."""
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
    the compiled run's error with numbers, names and paths masked."""

    verdict: str
    exceptions: tuple[str | None, str | None]
    differences: tuple[tuple[str, str], ...]
    error: str = ""

    @classmethod
    def of(cls, answer: dict[str, Any]) -> Signature:
        from ..campaign.outcome import normalise_error

        crashed = answer["verdict"] == "compile-error"
        return cls(answer["verdict"], tuple(answer["exceptions"]),
                   tuple((path, kind) for path, kind, _ in answer["differences"]),
                   normalise_error(answer.get("compiled_error") or "") if crashed else "")

    def kept_by(self, answer: dict[str, Any] | None) -> bool:
        if answer is None or "error" in answer:
            return False
        other = Signature.of(answer)
        if other.verdict != self.verdict or other.exceptions != self.exceptions:
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


def _layout(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inputs without their element counts: what shrinking must keep."""
    def strip(item: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in item.items() if k != "numel"}
        if "items" in kept:
            kept["items"] = [strip(i) for i in kept["items"]]
        return kept
    return [strip(item) for item in inputs]


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

    def add(self, name: str, answer: dict[str, Any] | None, kept: bool) -> None:
        self.tried += 1
        self.accepted += kept
        self.timeouts += answer is None
        self.errors += answer is not None and "error" in answer
        counts = self.by_pass.setdefault(name, [0, 0])
        counts[0] += 1
        counts[1] += kept


class Reduction:
    """One reduction: the current program and what judging its candidates cost."""

    def __init__(self, checker: Checker, scratch: Path, relative: Path, text: str,
                 budget: Budget, say: Callable[[str], None], started: float | None = None):
        self.checker, self.scratch, self.relative = checker, scratch, relative
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
        self._seen: dict[tuple[str, bool], bool] = {}
        self._count = 0

    def finding(self) -> tuple[Signature, dict[str, Any]]:
        """The finding's signature and the current program's answer (both set by
        ``_baseline`` before any candidate is tried)."""
        assert self.signature is not None and self.answer is not None
        return self.signature, self.answer

    # -- judging --------------------------------------------------------------------------------

    def judge(self, text: str, state: bool) -> dict[str, Any] | None:
        """Write ``text`` into a fresh candidate tree and judge it."""
        self._count += 1
        root = self.scratch / "trees" / f"c{self._count:06d}"
        if self.base_tree is not None:
            shutil.copytree(self.base_tree, root, ignore=shutil.ignore_patterns(
                "__pycache__", ".git"))
        target = root / self.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        screen = {"eager": self.signature.exceptions[0]} if self.signature else {}
        answer = self.checker.check(root, state, self.capped(self.timeout), **screen)
        previous = self.scratch / "trees" / f"c{self._count - 1:06d}"
        shutil.rmtree(previous, ignore_errors=True)  # the process has moved on from it
        return answer

    def attempt(self, name: str, text: str, state: bool | None = None,
                same_layout: bool = False) -> bool:
        """Judge a candidate; keep it (and return True) when the finding stays the same."""
        state = self.state if state is None else state
        key = (text, state)
        if key in self._seen or (text == self.text and state == self.state):
            self.tally.cached += 1
            return False
        try:
            ast.parse(text)
        except SyntaxError:  # libcst prints what it is given; nothing to judge
            self._seen[key] = False
            return False
        self._spend()
        answer = self.judge(text, state)
        signature, current = self.finding()
        kept = answer is not None and signature.kept_by(answer) and not (
            same_layout and _layout(answer["inputs"]) != _layout(current["inputs"]))
        self._seen[key] = kept
        self.tally.add(name, answer, kept)
        if kept:
            assert answer is not None  # kept_by(None) is False
            self.text, self.state, self.answer = text, state, answer
            size = rp.size(text)
            self.say(f"{self.tally.tried} tried: {name} kept; {size.statements} statements, "
                     f"{size.tokens} tokens, {elements(answer['inputs'])} input elements")
        return kept

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
        """Reduce until no pass finds anything; the reason it stopped early, if it did."""
        try:
            if self.state:
                self.attempt("weights", self.text, state=False)
            while True:
                before = (self.text, self.state)
                self.statements()
                self.greedy("inputs", rp.unused_input_candidates)
                self.greedy("members", rp.unused_member_candidates)
                self.greedy("unroll", rp.unroll_candidates)
                self.greedy("hoist", rp.hoist_candidates)
                self.greedy("expressions", rp.expression_candidates)
                self.shapes()
                self.greedy("constants", rp.constant_candidates)
                if (self.text, self.state) == before:
                    self.attempt("tidy", rp.tidy(self.text))
                    return None
        except OutOfBudget as stop:
            return str(stop)

    def statements(self) -> None:
        """Delta debugging over each statement list, outermost first."""
        body = 0
        while body < len(lengths := rp.body_lengths(self.text)):
            base = self.text

            def test(keep: list[int], base: str = base, body: int = body) -> bool:
                return self.attempt("statements", rp.keep_statements(base, body,
                                                                     frozenset(keep)))

            ddmin(list(range(lengths[body])), test)
            body += 1

    def greedy(self, name: str,
               candidates: Callable[[str, int], Iterator[tuple[int, str]]]) -> None:
        """Try candidates in order; after each kept one, go on from the same position."""
        start = 0
        while True:
            for position, text in candidates(self.text, start):
                if self.attempt(name, text):
                    start = position
                    break
            else:
                return

    def shapes(self) -> None:
        """Shrink input dimensions, keeping every input's dtype, rank and layout class."""
        while any(self.attempt("shapes", text, same_layout=True)
                  for text in rp.shape_candidates(self.text)):
            pass


def ddmin(items: list[int], test: Callable[[list[int]], bool]) -> list[int]:
    """Zeller's delta debugging: a 1-minimal subset of ``items`` that passes ``test`` (which
    ``items`` itself is assumed to pass): subsets first, then complements, then finer."""
    granularity = 2
    while len(items) >= 2:
        chunks = [items[i * len(items) // granularity:(i + 1) * len(items) // granularity]
                  for i in range(granularity)]
        smaller = None
        if granularity > 2:  # with two chunks, subsets and complements are the same tests
            smaller = next((chunk for chunk in chunks if test(chunk)), None)
        if smaller is not None:
            items, granularity = smaller, 2
            continue
        for chunk in chunks:
            complement = [item for item in items if item not in chunk]
            if test(complement):
                items, granularity = complement, max(granularity - 1, 2)
                break
        else:
            if granularity >= len(items):
                break
            granularity = min(2 * granularity, len(items))
    if len(items) == 1 and test([]):
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

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "target": self.target,
                "signature": {"verdict": self.signature.verdict,
                              "exceptions": list(self.signature.exceptions),
                              "differences": [list(d) for d in self.signature.differences],
                              "error": self.signature.error},
                "before": self.before, "after": self.after,
                "candidates": {"tried": self.tally.tried, "accepted": self.tally.accepted,
                               "timeouts": self.tally.timeouts, "errors": self.tally.errors,
                               "repeated": self.tally.cached, "by_pass": self.tally.by_pass},
                "seconds": round(self.seconds, 1), "stopped": self.stopped,
                "weights_dropped": self.weights_dropped, "reduced": str(self.reduced),
                "minimal": str(self.minimal), "verified": self.verified}


def reduce_folder(folder: Path, out: Path | None = None, budget: Budget | None = None,
                  say: Callable[[str], None] = lambda _: None, verify: bool = True) -> Result:
    """Reduce the reproducer in ``folder``; write ``minimal.py`` and ``reduced/`` to ``out``
    (default: ``folder``). ReduceError for a bad folder, NotReproduced when it does not fail."""
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
        reduction = Reduction(checker, scratch, relative, original, budget, say, started)
        baseline = _baseline(reduction, Path(description["root"]))
        say(f"reproduces: {reduction.finding()[0].describe()} ({baseline['seconds']:.1f}s)")
        stopped = reduction.run()
        signature, answer = reduction.finding()
        result = Result(
            repro, description["target"]["name"], signature,
            _sizes(original, baseline), _sizes(reduction.text, answer),
            reduction.tally, 0.0, stopped, description["has_state"] and not reduction.state,
            out / "reduced", out / "minimal.py")
        try:
            _write_reduced(result.reduced, repro, checker.core, reduction)
            _write_minimal(result.minimal, reduction, description)
            result.seconds = time.monotonic() - started
            (result.reduced / "reduction.json").write_text(
                json.dumps(result.to_dict(), indent=1) + "\n", encoding="utf-8")
        except OSError as error:
            raise ReduceError(f"{error.filename or out}: cannot write: "
                              f"{error.strerror or error}") from None
    finally:
        checker.close()
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
    reduction.timeout = reduction.budget.timeout or max(60.0, 5 * answer["seconds"])
    return answer


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
    (building / "repro.py").write_text(_rooted_here((repro / "repro.py").read_text(
        encoding="utf-8")), encoding="utf-8")
    old = destination.with_name(f".{destination.name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if destination.exists():
        destination.rename(old)
    building.rename(destination)
    shutil.rmtree(old, ignore_errors=True)


def _rooted_here(script: str) -> str:
    """``repro.py`` with its source tree moved to ``tree/`` inside its own folder."""
    node = next(n for n in ast.parse(script).body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "ROOT" for t in n.targets))
    lines = script.splitlines(keepends=True)
    root = 'ROOT = str(Path(__file__).resolve().parent / "tree")\n'
    return "".join(lines[:node.lineno - 1] + [root] + lines[node.end_lineno:])


def _write_minimal(path: Path, reduction: Reduction, description: dict[str, Any]) -> None:
    from eqrewrite.rewriter.api import write_atomic

    from .standalone import Recipe, minimal_script, uses_reference

    signature, answer = reduction.finding()
    if signature.differences:
        first = signature.differences[0]
        message = next(m for p, k, m in answer["differences"] if (p, k) == first)
    else:  # a compile crash: the compiled run raises
        message = answer["detail"]
    recipe = Recipe(
        target=description["target"], settings=description["settings"],
        seed=description["seed"], grad_inputs=answer["grad_inputs"],
        grads=any("['grads']" in path for path, _ in signature.differences),
        strict=description["strict"], scale=description["scale"],
        extra_paths=tuple(description["extra_paths"]),
        state="reduced/state.pt" if reduction.state else None, headline=message,
        torch_version=description["torch"], differences=signature.differences,
        reference=uses_reference([kind for _, kind in signature.differences],
                                 answer.get("detail", "")))
    write_atomic(path, minimal_script(reduction.text, recipe).encode("utf-8"))


def _verify(result: Result, timeout: float, left: float | None = None) -> dict[str, int | None]:
    """Run the reduced reproducer and minimal.py on their own: exit 1 means they fail;
    within ``left`` seconds when the time budget leaves only that (None: timed out)."""
    runs = {"reduced/repro.py": (result.reduced / "repro.py", result.reduced),
            "minimal.py": (result.minimal, result.minimal.parent)}
    started = {name: subprocess.Popen([sys.executable, str(script)], cwd=cwd,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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
    return codes
