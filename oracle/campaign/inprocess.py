"""The oracle's worker run in this process, for measurements of what a campaign executes.

A campaign runs each program in a warm worker process (``pool.Worker``), which contains
crashes and hangs. Measurements that must see inside those runs (statement coverage of
torch, a per-phase CPU profile) instead hand each request to a ``worker.Session`` in the
measuring process: ``in_process()`` makes every ``Harness`` built inside it use
``InProcessWorker``, so ``Harness.validate`` runs unchanged. Not for campaigns: a crash or a
hang of a program takes the measuring process with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class InProcessWorker:
    """Stands in for ``pool.Worker`` (same constructor and ``call``): each request is handled
    by a ``Session`` here, with the worker process's catch-all (a failure is an answer).
    ``observer(request, call)`` may wrap each request (timing it, for instance)."""

    observer: Callable[[Any, Callable[[], Any]], Any] | None = None

    def __init__(self, roots: dict[str, Path], memory_limit: int | None = None,
                 warm_up: bool = False):
        from ..judging.worker import Session

        self.session = Session({tree: str(root) for tree, root in roots.items()})
        self.start_seconds = 0.0

    def start(self) -> None:
        """Nothing to start: the session lives in this process."""

    def close(self) -> None:
        """Nothing to stop."""

    def call(self, request: Any, timeout: float = 0.0) -> Any:
        observer = InProcessWorker.observer
        return observer(request, lambda: self._handle(request)) if observer else \
            self._handle(request)

    def _handle(self, request: Any) -> Any:
        from ..judging.protocol import Failure, FailureKind, RunResult
        from ..judging.worker import describe_error

        try:
            return self.session.handle(request)
        except BaseException as error:  # noqa: BLE001 - as worker.serve: report, never die
            return RunResult(failure=Failure(FailureKind.ERROR, describe_error(error)))


@contextlib.contextmanager
def in_process() -> Iterator[None]:
    """Harnesses built inside use ``InProcessWorker`` instead of a worker process."""
    from unittest import mock

    from ..harness import harness

    with mock.patch.object(harness, "Worker", InProcessWorker):
        yield
