"""How the minimiser judges one candidate program: written into a fresh tree, screened by the
cheapest check that can refuse it, judged by one of the checking processes (``Judge``).

The screens, each a refusal only: one eager run (nothing compiled), the cheaper backend
(when the original shows its finding with it), the layout the inputs must keep, the
differences before the triage; then the reproducer's own settings. With parallel jobs the
checking processes are shared through a queue, the one freed last first.
"""

from __future__ import annotations

import ast
import queue
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..formats import Answer, Description, InputRecord, Probe, SettingsRecord
from .budget import Clock
from .checker import Checker
from .signature import Signature
from .standalone import module_level_names

DIFFERENCES = ("differences", "forward")  # the worker's screens that compared the calls


class Judge:
    """The checking processes, the screens, and the settings candidates are judged with."""

    def __init__(self, checker: Checker, scratch: Path, relative: Path, clock: Clock,
                 jobs: int = 1):
        assert checker.description is not None  # the checker has been started
        self.checker, self.scratch, self.relative, self.clock = checker, scratch, relative, clock
        self.description: Description = checker.description
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
        self.timeout = clock.budget.timeout or 600.0
        self.signature: Signature | None = None  # the finding's, once the baseline is judged
        # The verdict the reproducer shows (reproducers written before compile crashes were
        # reduced show compiler-bug).
        self.fails: str = self.description.get("fails", "compiler-bug")
        self.base_tree: Path | None = None  # the whole source tree, when one file is not enough
        # The compile settings the finding turned out not to need (``settings``): the fields
        # changed from the reproducer's, and whether the inputs' gradients were dropped.
        self.changed: SettingsRecord = {}
        self.no_input_grads = False
        self._count = 0

    @property
    def jobs(self) -> int:
        return len(self.checkers)

    @property
    def deferring(self) -> bool:
        """Whether candidates are kept on the screening backend's word, the full backend
        confirming the program every ``confirm_every`` kept ones (``Scheduler.confirm``)."""
        return self.screen_backend is not None and self.clock.budget.confirm_every > 0

    def judge(self, text: str, state: bool, checker: Checker | None = None,
              backend: str | None = None, root: Path | None = None, full: bool = False,
              layout: list[InputRecord] | None = None, capped: bool = False
              ) -> Answer | None:
        """Write ``text`` into a fresh candidate tree and judge it (on ``checker``, default
        the first): screened by one eager run, then by the cheaper backend when there is
        one, then with the reproducer's own settings (or with ``backend`` alone; or, with
        ``full``, with its own settings alone). While ``deferring``, the cheaper backend's
        answer is final. ``layout``: the inputs' layout classes (``layout_class``) the
        candidate must keep, checked before anything runs. A screen's rejection is the
        answer, marked ``screened``. ``capped``: a ``full`` judgement within the time
        budget too. Every judgement uses the settings the reduction kept (``changed``)."""
        checker = checker or self.checker
        root = root or self.tree()
        try:
            self.write_tree(text, root)
            screen: dict[str, Any] = {} if self.signature is None else {
                "eager": self.signature.exceptions[0],
                "differences": [list(d) for d in self.signature.differences]}
            screen.update(self._overrides())
            if layout is not None:
                screen["layout"] = layout
            if backend is not None:
                return checker.check(root, state, self.clock.capped(self.timeout),
                                     backend=backend, **screen)
            if full:  # a program the eager run passed already; the result depends on it,
                screen.pop("eager", None)  # so it may overstay the time budget
                return checker.check(root, state, self.clock.capped(self.timeout) if capped
                                     else self.timeout, **screen)
            if self.screen_backend is not None and self.signature is not None:
                answer = checker.check(root, state, self.clock.capped(self.timeout),
                                       backend=self.screen_backend, **screen)
                if answer is not None and "error" in answer:
                    return answer if answer.get("screened") not in DIFFERENCES else {
                        **answer, "screened": "backend"}
                if answer is None or not self.signature.kept_by(answer):
                    return answer if answer is None else {**answer, "screened": "backend"}
                if self.deferring:
                    return answer
                screen.pop("eager")  # the eager run just passed
            return checker.check(root, state, self.clock.capped(self.timeout), **screen)
        finally:
            shutil.rmtree(root, ignore_errors=True)  # the process has answered (or died)

    def write_tree(self, text: str, root: Path) -> None:
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

    def settings(self) -> SettingsRecord:
        """The compile settings candidates are judged with: the reproducer's, less those
        dropped."""
        return {**self.description["settings"], **self.changed}

    def probe(self, text: str, state: bool) -> Probe | None:
        """The checking process's look at ``text`` (``reduceworker.probe``): whether it
        draws random numbers, what its inputs are, each as a literal; None when it could
        not tell."""
        root = self.tree()
        checker = self._free.get() if self._pool is not None else self.checker
        try:
            self.write_tree(text, root)
            return checker.probe(root, state, self.clock.capped(self.timeout),
                                 **self._overrides())
        finally:
            if self._pool is not None:
                self._free.put(checker)
            shutil.rmtree(root, ignore_errors=True)

    def tree(self) -> Path:
        """A new candidate tree's folder (named in the main thread: judges run in several)."""
        self._count += 1
        return self.scratch / "trees" / f"c{self._count:06d}"

    def defines_target(self, tree: ast.Module) -> bool:
        """Whether a candidate still defines the target and its inputs at module level."""
        target = self.description["target"]
        wanted = {str(name).split(".")[0] for name in (target.get("attribute"),
                                                       target.get("inputs")) if name}
        return wanted <= module_level_names(tree)

    def submit(self, text: str, state: bool, layout: list[InputRecord] | None = None
               ) -> Future[Answer | None]:
        """Judge ``text``: now without parallel jobs, else on the next checking process
        free (the answer's future)."""
        root = self.tree()
        if self.jobs == 1:
            done: Future[Answer | None] = Future()
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

    def judge_apart(self, text: str, state: bool, capped: bool = False) -> Answer | None:
        """The full backend's judgement of ``text``, outside a pass's candidates (on a free
        process: with parallel jobs, judgements ahead may still run on the others)."""
        if self._pool is None:
            return self.judge(text, state, root=self.tree(), full=True, capped=capped)
        return self._judge_free(text, state, self.tree(), full=True, capped=capped)

    def _judge_free(self, text: str, state: bool, root: Path | None = None, full: bool = False,
                    layout: list[InputRecord] | None = None, capped: bool = False
                    ) -> Answer | None:
        checker = self._free.get()
        try:
            return self.judge(text, state, checker, root=root, full=full, layout=layout,
                              capped=capped)
        finally:
            self._free.put(checker)

    def close(self) -> None:
        """End the checking processes (and the judgements still running ahead)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        for checker in self.checkers:
            checker.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
