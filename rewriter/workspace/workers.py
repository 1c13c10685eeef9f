"""Worker processes that never outlive the command, and a clean stop on Ctrl-C or SIGTERM.

Three rules (ARCHITECTURE.md lists them as invariants):

- A worker dies with the main process, however that dies (kill -9 included): on Linux the
  kernel sends it SIGTERM when its parent exits (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
  watchdog thread notices that it has been re-parented.
- A worker stopped by SIGTERM first removes the temporary file of a write in progress, so
  a stopped run leaves every file old or new and no debris. Workers ignore SIGINT: Ctrl-C
  reaches the whole process group, and the main process alone decides what happens.
- In the main process, SIGINT and SIGTERM raise ``Interrupted``; leaving the pool on any
  exception terminates the workers at once instead of waiting for queued files.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import InvalidStateError, ProcessPoolExecutor
from typing import Any, TypeVar

from . import files

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
# Matching a file allocates its trees, facts and per-node contexts, which reference each other
# (closures, caches) and so die together as cycles. CPython's default thresholds (700, 10, 10)
# promote that garbage through the generations and traverse it again at each step; collecting
# young objects less often and the older generations rarely cut a cold graph-break run over
# transformers from 55 to 43 CPU s at the same peak memory (1.06 GB), measured side by side.
COLLECTOR_THRESHOLDS = (20_000, 1_000, 1_000)
WATCHDOG_INTERVAL = 0.5  # seconds between the fallback watchdog's checks
STOP_TIMEOUT = 5.0  # seconds a terminated worker gets before it is killed

T = TypeVar("T")
R = TypeVar("R")


class Interrupted(BaseException):
    """SIGINT or SIGTERM in the main process; a BaseException so no file boundary eats it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's convention for death by a signal: 128 + its number (130, 143)."""
        return 128 + self.signum


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While the block runs in the main thread, SIGINT and SIGTERM raise ``Interrupted``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


@contextlib.contextmanager
def collector_tuned() -> Iterator[None]:
    """While the block runs, the garbage collector uses ``COLLECTOR_THRESHOLDS``."""
    before = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class WorkerPool:
    """A process pool whose workers die with this process and stop when it is interrupted."""

    def __init__(self, workers: int, initializer: Callable[..., None],
                 initargs: tuple[object, ...] = ()):
        context = multiprocessing.get_context()
        # Under fork and spawn this process is each worker's parent; under forkserver the
        # server is, and it exits when this process does.
        direct = context.get_start_method() in ("fork", "spawn")
        self._executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker,
            initargs=(os.getpid(), direct, initializer, initargs))

    def map(self, function: Callable[[T], R], items: Iterable[T],
            chunksize: int = 1) -> Iterator[R]:
        """Like ``Executor.map``: results in order."""
        return self._executor.map(function, items, chunksize=chunksize)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type: type | None, *_: Any) -> None:
        if exc_type is None:
            self._executor.shutdown(wait=True)
        else:
            self.terminate()

    def terminate(self) -> None:
        """Stop now: drop queued work, SIGTERM the workers, reap them."""
        # The executor has no public way to stop running workers; its process table is
        # the only handle on them (and is cleared by shutdown, so read it first).
        processes = list((self._executor._processes or {}).values())
        manager = getattr(self._executor, "_executor_manager_thread", None)
        self._executor.shutdown(wait=False, cancel_futures=True)
        with _quiet_stop(manager):
            for process in processes:
                process.terminate()
            deadline = time.monotonic() + STOP_TIMEOUT
            for process in processes:
                process.join(max(0.0, deadline - time.monotonic()))
                if process.is_alive():
                    process.kill()
                    process.join()
            if manager is not None:
                manager.join(max(0.0, deadline - time.monotonic()))


@contextlib.contextmanager
def _quiet_stop(manager: threading.Thread | None) -> Iterator[None]:
    """While the pool stops: the executor's manager thread, seeing its workers gone, fails
    every pending future, and on CPython before 3.12 that raises ``InvalidStateError`` on
    the futures the stop has just cancelled, a traceback printed in the middle of a clean
    stop. That one error of that one thread is not printed; anything else is."""
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if not (args.thread is manager and args.exc_type is InvalidStateError):
            previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous


def _start_worker(main: int, direct: bool, initializer: Callable[..., None],
                  initargs: tuple[object, ...]) -> None:
    """Runs first in every worker: lifetime and signals, then the caller's initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    die_with_parent()
    # The main process may have died before the parent-death signal was armed.
    if (os.getppid() != main) if direct else not _alive(main):
        _stop_worker(signal.SIGTERM, None)
    gc.set_threshold(*COLLECTOR_THRESHOLDS)  # a worker lives only for the command
    initializer(*initargs)


def _stop_worker(signum: int, _frame: Any) -> None:
    files.remove_pending()
    os._exit(128 + signum)  # at once: the pool's own loop would wait for more work


def die_with_parent() -> None:
    """Make this process stop (as by SIGTERM) when its parent process is gone."""
    if not _set_parent_death_signal(signal.SIGTERM):
        _start_watchdog(os.getppid())


def _set_parent_death_signal(signum: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        status: int = libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
        return status == 0
    except (OSError, AttributeError):
        return False


def _start_watchdog(parent: int) -> threading.Thread:
    """A daemon thread that stops this process once it is no longer ``parent``'s child."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCHDOG_INTERVAL)
        # Directly, not by a signal: the main thread may be blocked reading the task queue,
        # and a signal caught by this thread would never interrupt that read.
        _stop_worker(signal.SIGTERM, None)

    thread = threading.Thread(target=watch, name="eqrewrite-parent-watchdog", daemon=True)
    thread.start()
    return thread


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
