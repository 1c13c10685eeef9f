"""The worker process: imports torch once, then runs targets on request.

A worker serves the source trees it is given (original and rewritten): for each run it puts
the requested tree first on ``sys.path`` and imports the trees' modules afresh, so the
rewritten tree shadows the original and every run starts from the same module-level state.
One process for both trees pays torch's and Inductor's start-up once, and the rewritten
compile finds the original's kernels in Inductor's caches. Requests arrive over a pipe; every
user-code failure becomes part of the response, never a dead worker. A worker never outlives
the oracle: it asks the kernel to kill it when its parent dies (Linux) and a watchdog thread
also exits
when the parent is gone or when a run overstays its own deadline, so a hanging target
cannot spin on after the parent stopped waiting.

``Session.run`` is also what a reproducer calls, in its own process.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import io
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from .protocol import (
    Failure,
    FailureKind,
    RaisedException,
    RunRequest,
    RunResult,
    Variant,
)
from .settings import CompileSettings, Target, TargetForm

if TYPE_CHECKING:  # torch is imported inside the worker process only, once it has started
    import torch

    from .graphbreaks import BreakRecorder, BreakReport
    from .observe import LineTracer
    from .reference import Float64Mode
    from .semantics import SemanticsMode

WATCHDOG_PERIOD = 0.5   # seconds between checks on the parent and the deadline
DEADLINE_GRACE = 10.0   # the parent's own timeout fires first; this is the backstop
_PR_SET_PDEATHSIG = 1


class Built(NamedTuple):
    """A target built for one run."""

    fn: Callable[..., Any]          # what is called: a built module, a function
    inputs: Any                     # positional inputs (a list) or keyword inputs (a dict)
    module: torch.nn.Module | None  # ``fn`` when it is a module
    source: ModuleType              # the target's Python module


def serve(conn: Connection, roots: dict[str, str], memory_limit: int | None, parent: int,
          warm_up: bool = False) -> None:
    """Process entry point: answer requests until the parent sends None or goes away."""
    watchdog = _Watchdog(parent)
    watchdog.start()
    import torch  # noqa: F401  (the expensive import, done once per worker)

    _thread_lock_for_tqdm()
    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    session = Session(roots)
    if warm_up:
        _warm_up()
    conn.send("ready")  # the parent times start-up (spawn, imports, warm-up) up to here
    while True:
        try:
            request = conn.recv()
        except EOFError:
            request = None
        if request is None:
            conn.close()
            _stop_compile_workers()
            os._exit(0)  # skip interpreter teardown with torch loaded (seconds, for nothing)
        watchdog.arm(getattr(request, "deadline", 600.0) + DEADLINE_GRACE)
        try:
            response = session.handle(request)
        except MemoryError:
            response = RunResult(failure=Failure(FailureKind.OOM, "out of memory"))
        except BaseException as error:  # noqa: BLE001 - report, never die
            response = RunResult(failure=Failure(FailureKind.ERROR, describe_error(error)))
        watchdog.disarm()
        conn.send(response)


class _Watchdog(threading.Thread):
    """Ends the worker when its parent is gone or a request overstays its deadline."""

    def __init__(self, parent: int):
        super().__init__(daemon=True, name="eqrewrite-watchdog")
        self.parent = parent
        self.until: float | None = None
        _die_with_parent()

    def arm(self, seconds: float) -> None:
        self.until = time.monotonic() + seconds

    def disarm(self) -> None:
        self.until = None

    def run(self) -> None:
        while True:
            time.sleep(WATCHDOG_PERIOD)
            if os.getppid() != self.parent:
                os._exit(70)  # orphaned: the oracle died (kill -9, crash)
            if self.until is not None and time.monotonic() > self.until:
                sys.stderr.write("eqrewrite worker: run exceeded its deadline\n")
                os._exit(71)


def _warm_up() -> None:
    """Compile a tiny function forward and backward with Inductor once: its first compile in
    a process costs tens of seconds (imports, compiler checks) that are better paid while the
    oracle is still starting than inside the first target's timing."""
    import torch

    with contextlib.suppress(Exception):  # a failure here shows again, and better, in a run
        value = torch.ones(3, requires_grad=True)
        torch.compile(lambda v: (v.sin() * 2).sum())(value).backward()
    torch._dynamo.reset()


def _thread_lock_for_tqdm() -> None:
    """torch.fx shows tqdm progress bars, and tqdm's default lock is a multiprocessing lock: a
    semaphore that ``os._exit`` leaves to the resource tracker, which then warns when the
    oracle exits. One process needs only a thread lock."""
    with contextlib.suppress(ImportError):
        from tqdm import tqdm

        tqdm.set_lock(threading.RLock())


def _stop_compile_workers() -> None:
    """Stop Inductor's compile subprocesses, which ``os._exit`` would leave to the resource
    tracker (it then warns about leaked semaphores when the oracle exits)."""
    if "torch._inductor.async_compile" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["torch._inductor.async_compile"].shutdown_compile_workers()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent exits (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def describe_error(error: BaseException) -> str:
    """The end of ``error``'s traceback: what a failed run reports."""
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(lines[-6:]).strip()


class Session:
    """Builds and runs targets of the given source trees inside the current process."""

    def __init__(self, roots: dict[str, str]):
        self.roots = {tree: str(Path(root).resolve()) for tree, root in roots.items()}

    def handle(self, request: object) -> Any:
        if isinstance(request, RunRequest):
            return self.run(request)
        if request == "purge":
            self.purge()
            return None
        if isinstance(request, tuple) and request and request[0] == "breaks":
            return self.breaks(*request[1:])
        served_in = getattr(request, "served_in", None)  # a request that brings its handler:
        if callable(served_in):  # the audit's measurements (probe.ProbeRequest)
            return served_in(self)
        raise ValueError(f"unknown request {request!r}")

    def purge(self) -> None:
        """Forget imported modules of the trees, so the next run imports them afresh: every
        run starts from the same module-level state, and edited files are read again."""
        roots = tuple(self.roots.values())
        for name, module in list(sys.modules.items()):
            location = getattr(module, "__file__", None) or ""
            if location and _resolved(location).startswith(roots):
                del sys.modules[name]
        importlib.invalidate_caches()

    def enter(self, tree: str) -> None:
        """Make ``tree`` the one imports come from (first on sys.path, current folder)."""
        root = self.roots[tree]
        sys.path[:] = [root] + [p for p in sys.path if p not in self.roots.values()]
        os.chdir(root)
        self.purge()

    # -- one run ------------------------------------------------------------------------------

    def run(self, request: RunRequest,
            before_backward: Callable[[RunResult], None] | None = None) -> RunResult:
        """Build the target, call it once as ``request.variant`` says, observe everything.
        ``before_backward``: called with what the call observed (no gradients yet) before the
        backward runs, when there is one; what it raises ends the run (the minimiser's
        screen: a backward costs a second compile)."""
        from .observe import LineTracer

        started = time.perf_counter()
        tracer = LineTracer(request.coverage)
        # An inference run has no backward, so its inputs never need grad.
        wanted = request.grad_inputs is not False and not request.settings.inference
        result = self._attempt(request, tracer, grad_inputs=wanted,
                               before_backward=before_backward)
        if request.grad_inputs is None and result.grad_inputs and (
                result.exception is not None or _backward_failed(result)):
            # Input gradients can make a target fail (in-place writes to its inputs), or
            # have no backward (floor_divide: a compiler must then fail at compile time
            # what eager fails only in backward); then it is compared as it is, without
            # them (the caller passes that on).
            result = self._attempt(request, tracer, grad_inputs=False)
        result.covered = tracer.covered
        result.seconds["total"] = time.perf_counter() - started
        return result

    def _attempt(self, request: RunRequest, tracer: LineTracer, grad_inputs: bool,
                 before_backward: Callable[[RunResult], None] | None = None) -> RunResult:
        import torch

        from .observe import (
            Printed,
            compiler_globals,
            gradients,
            module_state,
            to_plain,
            track_input_grads,
        )

        variant, settings = request.variant, request.settings
        started = time.perf_counter()
        self.enter(request.tree)
        with tracer:  # construction and get_inputs() count as executed too
            fn, inputs, module, source = self.build(request)
        state = _state_bytes(module) if request.state is None else None
        loaded = time.perf_counter()
        recorder, printed = _recorder(variant), Printed()
        with patched_compiler_config(settings), _reference(variant) as mode, \
                recorder or contextlib.nullcontext(), _checker(variant) as checker:
            if variant is Variant.COMPILED:
                torch._dynamo.reset()
                fn = compiled(fn, settings)
            graded = track_input_grads(inputs) if grad_inputs else []
            torch.manual_seed(request.seed)
            installed = compiler_globals() if variant is Variant.COMPILED else None
            with tracer, printed, installed or contextlib.nullcontext(set()) as names, \
                    _grad_mode(settings):
                output, exception = call_catching(fn, inputs)
            called = time.perf_counter()
            observed: dict[str, Any] = {"output": to_plain(output),
                                        "inputs_after": to_plain(inputs),
                                        "printed": printed.observed(),
                                        "module_state": module_state(source, names)}
            if module is not None:
                observed["state_after"] = to_plain(dict(module.state_dict()))
            # The breaks of the compiled call alone: a Compiled Autograd backward is
            # compiled by Dynamo too, its frame is not the target's.
            breaks = recorder.report() if recorder is not None else None
            if exception is None and before_backward is not None:
                before_backward(RunResult(observed=dict(observed)))
            if exception is None:
                observed["grads"] = gradients(output, module, graded,
                                              _backward(variant, settings))
            semantics = None if checker is None else checker.semantics(
                _live(output, inputs, module, graded, observed))
        return RunResult(
            observed=observed, exception=exception, state=state,
            diagnostics=printed.diagnostics, breaks=breaks,
            called=tuple(sorted(mode.called)) if mode is not None else (),
            grad_inputs=bool(graded), semantics=semantics,
            seconds={"load": loaded - started, "call": called - loaded,
                     "grads": time.perf_counter() - called})

    def build(self, request: RunRequest) -> Built:
        """``(callable, inputs, module or None, the target's Python module)`` under the seed,
        widened to float64 for the reference, perturbed for a perturbed run."""
        import torch

        from .nested import cast_floating
        from .reference import NUDGE, perturb

        target = request.target
        torch.manual_seed(request.seed)
        fn, inputs, source = _construct(target, request.seed)
        module = fn if isinstance(fn, torch.nn.Module) else None
        if module is not None:
            if request.state is not None:
                module.load_state_dict(torch.load(io.BytesIO(request.state), weights_only=True))
            module.eval()
        if request.variant is Variant.REFERENCE:
            inputs = cast_floating(inputs, torch.float64)
            if module is not None:
                module.double()
        if request.variant is Variant.PERTURBED:
            perturb(inputs, module, request.perturbation)
        elif request.variant is Variant.REFERENCE and request.perturbation:
            perturb(inputs, module, request.perturbation, relative=NUDGE)
        return Built(fn, inputs, module, source)

    def breaks(self, tree: str, target: Target, seed: int, state: bytes | None) -> BreakReport:
        """Graph-break counts measured apart from the runs: ``explain`` plus a
        ``fullgraph=True`` compile with Dynamo only (``--separate-break-count``)."""
        from .graphbreaks import count_graph_breaks

        self.enter(tree)
        request = RunRequest(target, CompileSettings(backend="eager"), Variant.EAGER, seed,
                             state, tree=tree)
        fn, inputs, _, _ = self.build(request)
        args, kwargs = ((), inputs) if isinstance(inputs, dict) else (tuple(inputs), {})
        return count_graph_breaks(fn, args, kwargs, backend="eager")


@functools.cache
def _resolved(location: str) -> str:
    """A module file's real path; cached, since resolving ~2,500 loaded modules' paths on
    every run was 8 % of a campaign program's CPU time (a file does not move mid-session)."""
    return str(Path(location).resolve())


def _backward_failed(result: RunResult) -> bool:
    """Whether the run's backward raised (its gradients hold only that error)."""
    grads = result.observed.get("grads") if result.observed is not None else None
    return isinstance(grads, dict) and "backward_error" in grads


def _construct(target: Target, seed: int) -> tuple[Callable[..., Any], Any, ModuleType]:
    """The target's callable (a built module for a module class), inputs, Python module."""
    import copy

    import torch

    if target.form is TargetForm.FACTORY:
        module_name, _, function = target.attribute.partition(":")
        source = importlib.import_module(module_name)
        made = getattr(source, function)()
        return made[0], list(made[1]), source
    assert target.module_name is not None  # only a factory target has no file
    source = importlib.import_module(target.module_name)
    fn = getattr(source, target.attribute)
    if target.form is TargetForm.MODULE:
        torch.manual_seed(seed)
        init = list(source.get_init_inputs()) if target.has_init_inputs else []
        fn = fn(*init)
    torch.manual_seed(seed)
    inputs = source.get_inputs() if target.inputs == "get_inputs" else copy.deepcopy(
        source.inputs)
    return fn, inputs, source


def _state_bytes(module: torch.nn.Module | None) -> bytes | None:
    import torch

    if module is None:
        return None
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getvalue()


def compiled(fn: Callable[..., Any], settings: CompileSettings) -> Callable[..., Any]:
    """``torch.compile`` with the requested backend (a name or ``module:function``)."""
    import torch

    backend: str | Callable[..., Any] = settings.backend
    if ":" in settings.backend:
        module_name, _, function = settings.backend.partition(":")
        backend = getattr(importlib.import_module(module_name), function)
    return torch.compile(fn, backend=backend, mode=settings.mode, dynamic=settings.dynamic,
                         fullgraph=settings.fullgraph)


def _backward(variant: Variant, settings: CompileSettings
              ) -> Callable[[Any], object] | None:
    """How a compiled run with ``dynamo.compiled_autograd`` calls backward: inside a frame
    compiled with the run's backend, the only place where Compiled Autograd traces it (a
    ``loss.backward()`` after the compiled call has returned runs eagerly whatever the
    switch). The frame itself breaks at ``backward()``, so it is never ``fullgraph``."""
    if variant is not Variant.COMPILED or not dict(settings.dynamo_config).get(
            "compiled_autograd"):
        return None
    from .observe import call_backward

    return compiled(call_backward, replace(settings, fullgraph=False))


@contextlib.contextmanager
def patched_compiler_config(settings: CompileSettings) -> Iterator[None]:
    """The settings' Inductor and Dynamo config switches, patched in for the whole run
    (compile, call and backward) and restored afterwards so the next target starts from the
    defaults."""
    with contextlib.ExitStack() as stack:
        if settings.inductor_config:
            import torch._inductor.config as inductor_config

            stack.enter_context(inductor_config.patch(dict(settings.inductor_config)))
        if settings.dynamo_config:
            import torch._dynamo.config as dynamo_config

            stack.enter_context(dynamo_config.patch(dict(settings.dynamo_config)))
        yield


def _grad_mode(settings: CompileSettings) -> contextlib.AbstractContextManager[None]:
    """``torch.no_grad()`` for an inference run (eager, compiled and triage runs alike)."""
    if not settings.inference:
        return contextlib.nullcontext()
    import torch

    return torch.no_grad()


def _reference(variant: Variant) -> contextlib.AbstractContextManager[Float64Mode | None]:
    if variant is not Variant.REFERENCE:
        return contextlib.nullcontext()
    from .reference import float64_reference

    return float64_reference()


def _checker(variant: Variant) -> contextlib.AbstractContextManager[SemanticsMode | None]:
    """The semantics checker of a ``CHECKED`` run (``semantics.py``)."""
    if variant is not Variant.CHECKED:
        return contextlib.nullcontext()
    from .semantics import SemanticsMode

    return SemanticsMode()


def _live(output: Any, inputs: Any, module: Any, graded: list[Any],
          observed: dict[str, Any]) -> dict[str, Any]:
    """The run's observed values before they were copied, keyed as ``observed`` is (what
    the semantics checker marks tainted or not)."""
    from .observe import live_gradients

    live: dict[str, Any] = {"output": output, "inputs_after": inputs}
    if module is not None:
        live["state_after"] = dict(module.state_dict())
    grads = observed.get("grads")
    if isinstance(grads, dict) and "backward_error" not in grads:
        live["grads"] = live_gradients(module, graded)
    return live


def _recorder(variant: Variant) -> BreakRecorder | None:
    if variant is not Variant.COMPILED:
        return None
    from .graphbreaks import BreakRecorder

    return BreakRecorder()


def call_catching(fn: Callable[..., Any], inputs: Any) -> tuple[object, RaisedException | None]:
    """Call ``fn`` with ``inputs`` (a dict as keywords, else positionally), catching what it
    raises: ``(output, None)``, or ``(None, the exception)``: raising is an outcome too.
    Iterators in the output are drained here, while the run's context is still active."""
    from .observe import settle

    try:
        output = fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)
        return settle(output), None
    except Exception as error:  # noqa: BLE001
        return None, raised(error)


def _tree_relative(filename: str) -> str:
    """A file of the tree being run (the current folder, see ``Session.enter``) relative to
    it, so that both trees name the same frame alike; any other file as it is."""
    here = os.getcwd() + os.sep
    return filename[len(here):] if filename.startswith(here) else filename


def raised(error: BaseException) -> RaisedException:
    """An exception as a comparable value: type, message without addresses, bases, frame."""
    from .records import strip_addresses

    error_type = type(error)
    frames = traceback.extract_tb(error.__traceback__)
    user = [f for f in frames if "/torch/" not in f.filename and "/oracle/" not in f.filename]
    frame = f"{_tree_relative(user[-1].filename)}:{user[-1].lineno} in {user[-1].name}" \
        if user else ""
    return RaisedException(
        f"{error_type.__module__}.{error_type.__qualname__}", strip_addresses(str(error))[:2000],
        tuple(f"{k.__module__}.{k.__qualname__}" for k in error_type.__mro__), frame)
