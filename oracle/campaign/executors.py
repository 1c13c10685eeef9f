"""Where seeds run: a local process pool (the default) or a Ray cluster.

Both take seeds one at a time (``submit``) and hand back finished results in completion
order (``finished``), so the runner keeps a bounded number of seeds in flight, stops
submitting when the time budget is spent, and writes every result as it arrives. Each
process that runs seeds keeps one warm oracle harness (``job.py``). Ray is imported only by
``RayExecutor``: the default path never imports it.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .job import JobSpec, run_seed
from .outcome import SeedResult


class ExecutorError(RuntimeError):
    """The executor cannot run (Ray missing, cluster unreachable): the message says why."""


def _ignore_interrupts() -> None:
    """Job processes leave Ctrl-C to the campaign, which stops them (terminal Ctrl-C reaches
    the whole process group)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """``jobs`` spawned processes on this machine."""

    name = "local"

    def __init__(self, spec: JobSpec, jobs: int):
        self.spec = spec
        self.jobs = jobs
        self.pool = self._pool()
        self.pending: dict[Future[SeedResult], int] = {}

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_ignore_interrupts)

    def submit(self, seed: int) -> None:
        try:
            future = self.pool.submit(run_seed, seed, self.spec)
        except BrokenProcessPool:  # a job process died (killed, out of memory): start anew
            self.pool = self._pool()
            future = self.pool.submit(run_seed, seed, self.spec)
        self.pending[future] = seed

    def finished(self, timeout: float | None) -> list[tuple[int, SeedResult | BaseException]]:
        """Results that completed within ``timeout`` (a result or the exception raised)."""
        if not self.pending:
            return []
        done, _ = wait(list(self.pending), timeout=timeout, return_when=FIRST_COMPLETED)
        results: list[tuple[int, SeedResult | BaseException]] = []
        for future in done:
            seed = self.pending.pop(future)
            error = future.exception()
            results.append((seed, error if error is not None else future.result()))
        return results

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    def close(self, cancel: bool = False) -> None:
        # Interrupted: the job processes go now (their oracle workers die with them); the
        # pool forgets its processes on shutdown, so they are listed first.
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)
        if cancel:
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(10)


class RayExecutor:
    """Seeds as Ray tasks on a cluster (``address``: ``auto``, ``ray://host:10001``, or None
    for a local instance); at most ``jobs`` in flight. A worker process of the cluster keeps
    its harness across the seeds it is given, as a local job does."""

    name = "ray"

    def __init__(self, spec: JobSpec, jobs: int, address: str | None, cpus_per_task: float = 1):
        try:
            import ray
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install 'eqrewrite[ray]'") from None
        self.ray = ray
        self.spec = spec
        self.jobs = jobs
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False,
                         ignore_reinit_error=True)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise ExecutorError(f"cannot reach the Ray cluster at {address!r}: {error}") \
                    from None
        self.task = ray.remote(num_cpus=cpus_per_task, max_retries=1)(run_seed)
        self.pending: dict[Any, int] = {}  # Ray object refs (ray is imported lazily)

    def submit(self, seed: int) -> None:
        self.pending[self.task.remote(seed, self.spec)] = seed

    def finished(self, timeout: float | None) -> list[tuple[int, SeedResult | BaseException]]:
        if not self.pending:
            return []
        done, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        results: list[tuple[int, SeedResult | BaseException]] = []
        for ref in done:
            seed = self.pending.pop(ref)
            try:
                results.append((seed, self.ray.get(ref)))
            except Exception as error:  # a task that failed: reported like a local one
                results.append((seed, error))
        return results

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    def close(self, cancel: bool = False) -> None:
        if cancel:
            for ref in self.pending:
                self.ray.cancel(ref, force=True)
        if self.started_here:
            self.ray.shutdown()
