"""One target measured for the graph-break audit, inside a worker process.

A probe runs the target eagerly and compiled exactly as the oracle's verdict runs do
(``Session.run``: outputs, printed text, module state and gradients observed; breaks counted
by ``BreakRecorder`` during the compiled run), then measures what the audit adds:

- recompilations: the compiled callable is called on every input set the target declares
  (``get_input_sets()``, a list of input lists; else its one ``get_inputs()``), and each
  frame Dynamo compiles again after the first set counts;
- compile time: the first compiled call minus a warm one;
- whether ``torch.compile(fullgraph=True)`` compiles and runs (it may where the default
  mode breaks: ``fullgraph`` turns scalar capture on);
- with ``bench``, median eager and compiled latencies of warm calls;
- a what-if switch (``ignore_logger_methods``...), resolved here, after the target's code
  is imported, because its value names functions that only exist then.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from ..judging.protocol import Failure, RunRequest, RunResult, Variant
from ..judging.settings import CompileSettings, Target
from ..judging.worker import Built, Session, call_catching, compiled, patched_compiler_config

# Logger methods Dynamo may drop (Hugging Face adds warning_once/info_once to Logger).
LOGGER_METHODS = ("debug", "info", "warning", "warn", "error", "critical", "fatal",
                  "exception", "log", "warning_once", "info_once")


@dataclass(frozen=True)
class ProbeRequest:
    """Measure ``target`` on one tree; ``switch`` is a what-if ``(name, value)``."""

    target: Target
    settings: CompileSettings
    seed: int = 0
    state: bytes | None = None
    switch: tuple[str, str] | None = None
    eager: bool = True          # also run eagerly (the what-if runs reuse the original's)
    measure: bool = True        # recompilations, compile time, fullgraph
    bench: int = 0              # timed warm calls (0: no latency)
    deadline: float = 300.0
    tree: str = "original"      # which of the worker's trees

    def served_in(self, session: Session) -> ProbeResult:
        """The worker's answer (``Session.handle`` asks the request)."""
        return probe(session, self)


@dataclass
class ProbeResult:
    """What a probe observed; ``compiled.breaks`` is the BreakReport."""

    eager: RunResult | None = None
    compiled: RunResult | None = None
    input_sets: int = 1
    recompilations: int = 0
    compile_seconds: float = 0.0
    fullgraph_ok: bool | None = None
    fullgraph_error: str | None = None
    latency: dict[str, float] | None = None  # median seconds: "eager", "compiled"
    failure: Failure | None = None


def probe(session: Session, request: ProbeRequest) -> ProbeResult:
    """Run the probe (the worker's handler for a ProbeRequest)."""
    with _torch_log_streams():
        return _probe(session, request)


def _probe(session: Session, request: ProbeRequest) -> ProbeResult:
    result = ProbeResult()
    base = RunRequest(request.target, request.settings, Variant.EAGER, request.seed,
                      request.state, deadline=request.deadline, tree=request.tree)
    if request.eager:
        result.eager = session.run(base)
        state = request.state or result.eager.state
        base = replace(base, state=state)
    switched = _SwitchedSession(session.roots, request.switch)
    result.compiled = switched.run(replace(base, variant=Variant.COMPILED))
    if request.measure and result.compiled.exception is None:
        _measure(session, base, result)
    if request.bench:
        result.latency = _latency(session, base, request.bench)
    return result


class _SwitchedSession(Session):
    """A session that turns a what-if switch on once the target's code is imported, for
    the compiled run only, and restores it afterwards."""

    def __init__(self, roots: dict[str, str], switch: tuple[str, str] | None):
        super().__init__(roots)
        self.switch = switch

    def run(self, request: RunRequest,
            before_backward: Callable[[RunResult], None] | None = None) -> RunResult:
        import torch._dynamo.config as config

        if self.switch is None:
            return super().run(request, before_backward)
        saved = getattr(config, self.switch[0])
        try:
            return super().run(request, before_backward)
        finally:
            setattr(config, self.switch[0], saved)

    def build(self, request: RunRequest) -> Built:
        built = super().build(request)
        if self.switch is not None:
            import torch._dynamo.config as config

            name, value = self.switch
            setattr(config, name, resolve_switch(name, value, getattr(config, name)))
        return built


def resolve_switch(name: str, value: str, current: object) -> object:
    """The config value a what-if names: sets of functions for the logging switches."""
    if name == "ignore_logger_methods":
        found = {getattr(logging.Logger, m) for m in LOGGER_METHODS if hasattr(logging.Logger, m)}
        return _functions(current) | found
    if name == "reorderable_logging_functions":
        return _functions(current) | {builtins.print, warnings.warn}
    return {"true": True, "false": False}.get(value, value)


def _functions(current: object) -> set[object]:
    """A copy of a switch's current set of functions."""
    assert isinstance(current, Iterable)  # Dynamo keeps these switches as sets
    return set(current)


def _inputs(source: ModuleType, inputs: Any) -> list[Any]:
    """Every input set of the target: ``get_input_sets()`` if it declares them."""
    declared = getattr(source, "get_input_sets", None)
    return [inputs] + list(declared())[1:] if callable(declared) else [inputs]


def _measure(session: Session, base: RunRequest, result: ProbeResult) -> None:
    """Recompilations over the input sets, compile time, and the fullgraph check."""
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    session.enter(base.tree)
    fn, inputs, _, source = session.build(base)
    sets = _inputs(source, inputs)
    result.input_sets = len(sets)
    with patched_compiler_config(base.settings), torch.no_grad(), _quiet():
        torch._dynamo.reset()
        counters.clear()
        fast = compiled(fn, base.settings)
        started = time.perf_counter()
        call_catching(fast, sets[0])
        first = time.perf_counter() - started
        frames = counters["frames"]["total"]
        for extra in sets[1:]:
            call_catching(fast, extra)
        result.recompilations = counters["frames"]["total"] - frames
        started = time.perf_counter()
        call_catching(fast, sets[0])
        result.compile_seconds = max(0.0, first - (time.perf_counter() - started))
        torch._dynamo.reset()
        strict = compiled(fn, replace(base.settings, fullgraph=True))
        _, error = call_catching(strict, sets[0])
        torch._dynamo.reset()
    result.fullgraph_ok = error is None
    result.fullgraph_error = None if error is None else error.describe()


def _latency(session: Session, base: RunRequest, calls: int) -> dict[str, float]:
    """Median seconds of ``calls`` warm eager and compiled calls (no gradients)."""
    import torch
    import torch._dynamo

    session.enter(base.tree)
    fn, inputs, _, _ = session.build(base)
    timings: dict[str, float] = {}
    with patched_compiler_config(base.settings), torch.no_grad(), _quiet():
        torch._dynamo.reset()
        for label, callable_ in (("eager", fn), ("compiled", compiled(fn, base.settings))):
            call_catching(callable_, inputs)  # warm-up (compiles)
            runs = []
            for _ in range(calls):
                started = time.perf_counter()
                call_catching(callable_, inputs)
                runs.append(time.perf_counter() - started)
            timings[label] = statistics.median(runs)
        torch._dynamo.reset()
    return timings


@contextlib.contextmanager
def _torch_log_streams() -> Iterator[None]:
    """torch's log handlers write to the stderr they found when torch set them up, past any
    redirection: point them elsewhere while probing, so that the compiler's warnings never
    reach the audit's terminal (the breaks are recorded by their own handler)."""
    handlers = list({id(h): h for name, logger in logging.Logger.manager.loggerDict.items()
                     if name == "torch" or name.startswith("torch.")
                     for h in getattr(logger, "handlers", [])
                     if isinstance(h, logging.StreamHandler)
                     and not isinstance(h, logging.FileHandler)}.values())
    # A real file: some handlers ask their stream for fileno() (a StringIO has none).
    with open(os.devnull, "w", encoding="utf-8") as sink:
        streams = [h.stream for h in handlers]
        for handler in handlers:
            handler.stream = sink  # assigned, not setStream(): no flush of a stale stream
        try:
            yield
        finally:
            for handler, stream in zip(handlers, streams):
                handler.stream = stream


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """What the target prints and the compiler logs while measured is not observed (the
    runs observe it): nothing reaches the worker's stderr."""
    import io

    logging.disable(logging.CRITICAL)  # torch's log handlers hold the real stderr
    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)
