"""Parent-side handles on warm worker processes, with timeouts and crash containment.

Workers are started with the ``spawn`` method (forking a process that has
imported torch is unsafe) and kept warm across targets, because importing torch
costs seconds. A request that hangs past its timeout, or a worker that dies
(segfault, abort, kill), is reported as a failure and the worker is replaced.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from ..judging import worker
from ..judging.protocol import Failure, FailureKind, RunResult

DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_LIMIT = 16 * 1024**3


class Worker:
    """One warm worker process serving the given source trees (``{"original": path, ...}``)."""

    def __init__(self, roots: dict[str, Path], memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
                 warm_up: bool = False):
        self.roots = {tree: Path(root).resolve() for tree, root in roots.items()}
        self.memory_limit = memory_limit
        self.warm_up = warm_up
        self.process: BaseProcess | None = None
        self.conn: Connection | None = None  # the parent's end of the pipe, once started
        self.start_seconds = 0.0  # spawn + torch import, summed over (re)starts
        self._started = 0.0
        self._ready = False

    def start(self) -> None:
        """Launch the process without waiting for it (it imports torch meanwhile)."""
        if self.process is not None and self.process.is_alive():
            return
        self._started = time.perf_counter()
        self._ready = False
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = process = context.Process(target=worker.serve,
                                       args=(child, {t: str(r) for t, r in self.roots.items()},
                                             self.memory_limit, os.getpid(), self.warm_up),
                                       daemon=True)
        process.start()
        child.close()

    def _pipe(self) -> Connection:
        assert self.conn is not None, "the worker was never started"
        return self.conn

    def _wait_ready(self, timeout: float) -> Failure | None:
        if self._ready:
            return None
        if not self._pipe().poll(timeout):
            self._kill()
            return Failure(FailureKind.TIMEOUT, "worker did not start in time")
        self._pipe().recv()
        self._ready = True
        self.start_seconds += time.perf_counter() - self._started
        return None

    def call(self, request: Any, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Send one request and wait for its answer (see ``submit`` and ``receive``)."""
        failure = self.submit(request, timeout)
        return self._failed(failure) if failure is not None else self.receive(timeout)

    def submit(self, request: Any, timeout: float = DEFAULT_TIMEOUT) -> Failure | None:
        """Send one request without waiting for the answer; a Failure if it cannot be sent."""
        try:
            if self.process is None or not self.process.is_alive():
                self.start()
            failure = self._wait_ready(max(timeout, 120.0))
            if failure is not None:
                return failure
            self._pipe().send(request)
            return None
        except (EOFError, BrokenPipeError, ConnectionResetError):
            return Failure(FailureKind.CRASH, _exit_description(self._reap()))

    def receive(self, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """The answer to the request sent last; a hang or a dead worker becomes a
        ``RunResult`` carrying the Failure (and the worker is replaced on the next call)."""
        try:
            if not self._pipe().poll(timeout):
                self._kill()
                return self._failed(Failure(FailureKind.TIMEOUT,
                                            f"no answer within {timeout:g} s"))
            return self._pipe().recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            return self._failed(Failure(FailureKind.CRASH, _exit_description(self._reap())))

    @staticmethod
    def _failed(failure: Failure) -> RunResult:
        return RunResult(failure=failure)

    def _kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join(5)
        self.process = None

    def _reap(self) -> int | None:
        if self.process is None:
            return None
        self.process.join(5)
        code = self.process.exitcode
        self.process = None
        return code

    def stop(self) -> None:
        """Ask the worker to exit, without waiting."""
        if self.process is not None and self.process.is_alive():
            try:
                self._pipe().send(None)
            except (BrokenPipeError, OSError):
                pass

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        self.stop()
        if self.process is not None:
            self.process.join(10)
            if self.process.is_alive():
                self._kill()
        self.process = None


def _exit_description(code: int | None) -> str:
    if code is None:
        return "worker exited"
    if code < 0:
        try:
            return f"worker killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with status {code}"
