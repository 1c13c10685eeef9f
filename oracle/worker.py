"""The worker process: imports torch once, then runs targets on request.

Each worker serves one source tree (original or rewritten), first on
``sys.path``, so the rewritten tree shadows the original. Requests arrive over
a pipe; every user-code failure becomes part of the response, never a dead
worker (a segfault or hang is the parent's to detect). Results are converted to
plain containers and tensors so the parent can unpickle them without importing
user code.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import resource
import sys
import time
import traceback
from dataclasses import fields, is_dataclass
from pathlib import Path

from .targets import CompileSettings, Target

GRAD_PROJECTION_SEED = 1234


def serve(conn, root: str, memory_limit: int | None) -> None:
    """Process entry point: answer requests until the parent sends None."""
    sys.path.insert(0, root)
    os.chdir(root)
    import torch  # noqa: F401  (the expensive import, done once per worker)

    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    conn.send("ready")  # the parent times start-up (spawn + torch import) up to here
    handlers = {"run": run, "breaks": breaks, "purge": lambda request: purge(root)}
    while True:
        try:
            request = conn.recv()
        except EOFError:
            request = None
        if request is None:
            conn.close()
            os._exit(0)  # skip interpreter teardown with torch loaded (seconds, for nothing)
        try:
            response = handlers[request["op"]](request)
        except MemoryError:
            response = {"failure": "oom", "message": "out of memory"}
        except BaseException as error:  # noqa: BLE001 - report, never die
            response = {"failure": "error", "message": _describe(error)}
        conn.send(response)


def purge(root: str) -> dict:
    """Forget imported user modules so edited files are imported afresh."""
    prefix = str(Path(root).resolve())
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None) or ""
        if location and str(Path(location).resolve()).startswith(prefix):
            del sys.modules[name]
    importlib.invalidate_caches()
    return {}


def _describe(error: BaseException) -> str:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(lines[-6:]).strip()


# -- building targets -------------------------------------------------------------------------


def load(target: Target, seed: int, state: bytes | None, float64: bool):
    """Return ``(callable, inputs, module or None)`` built under ``seed``."""
    import torch

    from .compare import cast_floating

    torch.manual_seed(seed)
    module = None
    if target.kind == "factory":
        module_name, _, function = target.attribute.partition(":")
        function_object = getattr(importlib.import_module(module_name), function)
        made = function_object()
        fn, inputs = made[0], list(made[1])
    else:
        source = importlib.import_module(target.module_name)
        fn = getattr(source, target.attribute)
        if target.kind == "module":
            torch.manual_seed(seed)
            init = list(source.get_init_inputs()) if target.has_init_inputs else []
            fn = fn(*init)
        torch.manual_seed(seed)
        if target.inputs == "get_inputs":
            inputs = source.get_inputs()
        else:
            import copy

            inputs = copy.deepcopy(source.inputs)
    if isinstance(fn, torch.nn.Module):
        module = fn
        if state is not None:
            module.load_state_dict(torch.load(io.BytesIO(state), weights_only=True))
        module.eval()
    if float64:
        inputs = cast_floating(inputs, torch.float64)
        if module is not None:
            module.double()
    return fn, inputs, module


def _state_bytes(module) -> bytes | None:
    import torch

    if module is None:
        return None
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getvalue()


def compiled(fn, settings: CompileSettings):
    """``torch.compile`` with the requested backend (a name or ``module:function``)."""
    import torch

    backend: object = settings.backend
    if ":" in settings.backend:
        module_name, _, function = settings.backend.partition(":")
        backend = getattr(importlib.import_module(module_name), function)
    return torch.compile(fn, backend=backend, mode=settings.mode, dynamic=settings.dynamic,
                         fullgraph=settings.fullgraph)


def _inductor_patch(settings: CompileSettings):
    if not settings.inductor_config:
        return contextlib.nullcontext()
    import torch._inductor.config as inductor_config

    return inductor_config.patch(dict(settings.inductor_config))


# -- running ----------------------------------------------------------------------------------


def run(request: dict) -> dict:
    """Build the target, call it once (eager or compiled) and report everything observable."""
    import torch

    target: Target = request["target"]
    settings: CompileSettings = request["settings"]
    started = time.perf_counter()
    tracer = _LineTracer(request.get("coverage", ()))
    with tracer:  # construction and get_inputs() count as executed too
        fn, inputs, module = load(target, request["seed"], request.get("state"),
                                  request.get("float64", False))
    state = _state_bytes(module) if request.get("state") is None else None
    loaded = time.perf_counter()
    if request["variant"] == "compiled":
        torch._dynamo.reset()
        fn = compiled(fn, settings)
    graded = _track_input_grads(inputs)
    torch.manual_seed(request["seed"])
    printed = _Printed()
    with _inductor_patch(settings), tracer, printed:
        output, exception = _call(fn, inputs)
        if exception is not None and graded:
            # Input gradients can make a target fail (in-place writes to its inputs);
            # then compare it as it is, without them.
            fn, inputs, module = load(target, request["seed"], state or request.get("state"),
                                      request.get("float64", False))
            if request["variant"] == "compiled":
                torch._dynamo.reset()
                fn = compiled(fn, settings)
            graded = []
            torch.manual_seed(request["seed"])
            printed = _Printed()
            with printed:
                output, exception = _call(fn, inputs)
    finished = time.perf_counter()
    observed = {"output": to_plain(output), "inputs_after": to_plain(inputs),
                "printed": printed.observed()}
    if module is not None:
        observed["state_after"] = to_plain(dict(module.state_dict()))
    if exception is None:
        observed["grads"] = _gradients(output, module, graded)
    return {"observed": observed, "exception": exception, "state": state,
            "covered": tracer.covered,
            "seconds": {"load": loaded - started, "call": finished - loaded,
                        "grads": time.perf_counter() - finished}}


def _call(fn, inputs) -> tuple[object, dict | None]:
    """``(output, None)``, or ``(None, exception description)``: raising is an outcome too."""
    from .compare import materialize

    try:
        output = fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)
        return materialize(output), None
    except Exception as error:  # noqa: BLE001
        return None, {"type": type(error).__name__, "message": str(error)[:2000]}


def is_compiler_warning(warning) -> bool:
    """A warning torch.compile itself raised (Dynamo's diagnostics, deprecations inside
    torch), not one the program raised, even through a stacklevel that points into torch."""
    import torch

    folder = Path(torch.__file__).parent
    compiler = tuple(str(folder / part) for part in ("_dynamo", "_inductor", "_functorch"))
    return warning.filename.startswith(compiler) or (
        warning.filename.startswith(str(folder))
        and issubclass(warning.category, DeprecationWarning))


class _Printed:
    """What a run printed and warned: part of its observable behaviour (and kept off the
    oracle's own output). The compiler's own warnings are not, and
    Hugging Face's once-per-process ``warning_once`` is reset so every run logs alike."""

    def __enter__(self):
        import warnings


        once = getattr(logging.Logger, "warning_once", None)
        if hasattr(once, "cache_clear"):
            once.cache_clear()
        self._out, self._err = io.StringIO(), io.StringIO()
        self._redirects = [contextlib.redirect_stdout(self._out),
                           contextlib.redirect_stderr(self._err)]
        self._warnings = warnings.catch_warnings(record=True)
        self._caught = self._warnings.__enter__()
        warnings.simplefilter("always")
        for redirect in self._redirects:
            redirect.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for redirect in reversed(self._redirects):
            redirect.__exit__(*exc)
        self._warnings.__exit__(*exc)

    def observed(self) -> dict:
        warned = [f"{w.category.__name__}: {w.message}" for w in self._caught
                  if not is_compiler_warning(w)]
        return {"stdout": self._out.getvalue(), "stderr": self._err.getvalue(),
                "warnings": warned}


def _track_input_grads(inputs) -> list:
    """Make floating input tensors require grad, so their gradients can be compared."""
    tracked = [t for t in _tensors(inputs) if t.is_floating_point() and not t.requires_grad]
    for tensor in tracked:
        tensor.requires_grad_(True)
    return tracked


def _gradients(output, module, inputs: list) -> dict | None:
    """Backward through a fixed projection of the floating outputs: input and parameter grads."""
    import torch

    tensors = [t for t in _tensors(output) if t.is_floating_point() and t.requires_grad]
    if not tensors:
        return None
    generator = torch.Generator().manual_seed(GRAD_PROJECTION_SEED)
    loss = sum((t * torch.randn(t.shape, generator=generator, dtype=t.dtype)).sum()
               for t in tensors)
    try:
        loss.backward()
    except RuntimeError as error:
        return {"backward_error": str(error)[:500]}
    grads = {f"input{i}": _grad(t) for i, t in enumerate(inputs)}
    if module is not None:
        grads.update({name: _grad(p) for name, p in module.named_parameters()})
    return grads


def _grad(tensor):
    return tensor.grad.detach().clone() if tensor.grad is not None else None


def _tensors(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors(value)
    elif isinstance(obj, list | tuple):
        for value in obj:
            yield from _tensors(value)
    elif is_dataclass(obj) and not isinstance(obj, type):
        for item in fields(obj):
            yield from _tensors(getattr(obj, item.name))


def to_plain(obj):
    """Tensors (detached copies), builtins and containers; other objects become records."""
    import torch

    from .records import Opaque, Record

    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        return obj
    if isinstance(obj, torch.dtype | torch.device | torch.Size):
        return obj
    if isinstance(obj, dict):
        items = {key if isinstance(key, str | int) else repr(key): to_plain(v)
                 for key, v in obj.items()}
        return items if type(obj) is dict else Record(_type_name(obj), items)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return Record(_type_name(obj), {f: to_plain(getattr(obj, f)) for f in obj._fields})
    if isinstance(obj, list | tuple):
        converted = [to_plain(v) for v in obj]
        return converted if type(obj) is list else tuple(converted)
    if is_dataclass(obj) and not isinstance(obj, type):
        return Record(_type_name(obj), {f.name: to_plain(getattr(obj, f.name))
                                        for f in fields(obj)})
    return Opaque(_type_name(obj), repr(obj)[:500])


def _type_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


class _LineTracer:
    """Records executed lines of the given files (edit coverage), only while active."""

    def __init__(self, files):
        self.files = {str(f) for f in files}  # absolute, as imported from the resolved root
        self.covered: dict[str, set[int]] = {}

    def __enter__(self):
        if self.files:
            sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        if self.files:
            sys.settrace(None)

    def _global(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if filename in self.files:
            lines = self.covered.setdefault(filename, set())
            lines.add(frame.f_lineno)

            def local(frame, event, arg):
                if event == "line":
                    lines.add(frame.f_lineno)
                return local
            return local
        return None


def breaks(request: dict) -> dict:
    """Graph-break counts of the target, compiled with Dynamo only."""
    from .graphbreaks import count_graph_breaks

    target: Target = request["target"]
    fn, inputs, _ = load(target, request["seed"], request.get("state"), False)
    args, kwargs = ((), inputs) if isinstance(inputs, dict) else (tuple(inputs), {})
    return {"report": count_graph_breaks(fn, args, kwargs, backend="eager")}
