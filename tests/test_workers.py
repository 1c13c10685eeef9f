"""Rewrite workers die with the main process (kill -9 included) and stop cleanly on Ctrl-C
and SIGTERM: real processes, killed for real, then /proc is checked for survivors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

FUNCTIONS_PER_FILE = 100  # about half a second of rewriting per file
FILES = 40


def _state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (``Z`` for a zombie), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _survivors(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The processes of ``pids`` still running (not gone, not zombies) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _state(pid) not in (None, "Z")]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Enough work for two workers to be busy for many seconds."""
    body = "import torch\n\n" + "".join(
        f"def f{i}(x: torch.Tensor, y: torch.Tensor):\n    z = x + y * {i}\n"
        f"    return -z / 2 + x @ y\n\n" for i in range(FUNCTIONS_PER_FILE))
    for n in range(FILES):
        (tmp_path / f"m{n:02}.py").write_text(body)
    return tmp_path


def _start(corpus: Path) -> tuple[subprocess.Popen, list[int]]:
    """eqrewrite in its own session, once both of its workers run; with their pids."""
    process = subprocess.Popen(
        [sys.executable, "-m", "eqrewrite.rewriter", str(corpus), "-j", "2", "--no-cache"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = _wait_for(lambda: len(_children(process.pid)) >= 2 and _children(process.pid),
                        60, "two workers")
    time.sleep(0.5)  # let them start writing
    return process, workers


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".eqrw")]


def test_kill_9_of_the_main_process_leaves_no_worker(corpus):
    process, workers = _start(corpus)
    process.kill()
    process.wait()
    assert _survivors(workers) == []
    assert _temporaries(corpus) == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_stop_everything_with_a_message(corpus, signum, code):
    process, workers = _start(corpus)
    # Ctrl-C reaches the whole process group; SIGTERM usually the main process alone.
    if signum == signal.SIGINT:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr
    assert f"stopped by {signal.Signals(signum).name}" in stderr
    assert "Traceback" not in stderr
    assert _survivors(workers) == []
    assert _temporaries(corpus) == []


def test_watchdog_stops_a_worker_whose_parent_dies_where_prctl_is_missing(tmp_path):
    # The fallback for platforms without PR_SET_PDEATHSIG, exercised here directly.
    child = textwrap.dedent("""
        import os, time
        from eqrewrite.rewriter.workspace import workers
        workers._start_watchdog(os.getppid())
        print(os.getpid(), flush=True)
        time.sleep(60)
    """)
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", {child!r}], stdout=sys.stdout)
        time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE,
                               text=True)
    worker = int(process.stdout.readline())
    process.kill()
    process.wait()
    assert _survivors([worker]) == []


def _nothing() -> None:
    """A worker initializer with nothing to load."""


def test_rewrite_processes_collect_garbage_rarely_and_restore_the_defaults():
    import gc

    from eqrewrite.rewriter.workspace.workers import (
        COLLECTOR_THRESHOLDS,
        WorkerPool,
        collector_tuned,
    )

    before = gc.get_threshold()
    assert before != COLLECTOR_THRESHOLDS
    with collector_tuned():
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    assert gc.get_threshold() == before  # a library caller's process is left as it was
    with WorkerPool(1, _nothing) as pool:
        assert list(pool.map(_worker_thresholds, [0])) == [COLLECTOR_THRESHOLDS]


def _worker_thresholds(_: int) -> tuple[int, int, int]:
    import gc

    return gc.get_threshold()


def test_a_stop_hides_only_the_managers_error_on_cancelled_futures(monkeypatch):
    # CPython 3.11's pool manager fails the futures a stop has just cancelled with
    # InvalidStateError: that traceback alone is not printed; other errors still are.
    from concurrent.futures import InvalidStateError

    from eqrewrite.rewriter.workspace.workers import _quiet_stop

    printed: list[tuple[str, type]] = []

    def record(args) -> None:
        printed.append((args.thread.name, args.exc_type))

    monkeypatch.setattr(threading, "excepthook", record)

    def failing(error: type[BaseException]) -> threading.Thread:
        def run() -> None:
            raise error("CANCELLED: <Future state=cancelled>")
        return threading.Thread(target=run, name=f"{error.__name__}-thread")

    manager = failing(InvalidStateError)
    other_error, other_thread = failing(RuntimeError), failing(InvalidStateError)
    with _quiet_stop(manager):
        for thread in (manager, other_error, other_thread):
            thread.start()
            thread.join()
    assert printed == [("RuntimeError-thread", RuntimeError),
                       ("InvalidStateError-thread", InvalidStateError)]
    assert threading.excepthook is record  # the previous hook is back
