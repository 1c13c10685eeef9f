"""What a run makes observable, turned into plain values the parent process can compare.

Runs happen in worker processes; the parent never imports user code, so everything a run
returns is converted here: tensors (detached copies), builtins and containers as they are,
dataclasses, named tuples and dict subclasses as ``Structured`` records, iterators as a
``Structured`` of what they yielded and returned, anything else as an ``Opaque`` (type and
repr). Besides the return value a run observes what it printed and warned, the
module-level state of the target's own module, and gradients.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import types
from collections.abc import Callable, Iterator, Set
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TextIO, TypedDict

import torch

from .records import Opaque, Structured

GRAD_PROJECTION_SEED = 1234

# A ``sys.settrace`` function: returns the local trace function for the frame, or None.
_Tracer = Callable[[types.FrameType, str, Any], Any]


def settle(obj: Any) -> Any:
    """``obj`` with every iterator in it (generators, ``map``, ``zip``, …) run to its end and
    replaced by a ``Structured`` of its type, what it yielded and what it returned (a
    generator's ``return`` value, carried by ``StopIteration.value``): a compiled run that
    returns a ``tuple_iterator`` where eager returns a generator differs. Tensors stay live
    (gradients flow through them). Draining runs user code, so it happens inside the run."""
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, Iterator):
        yielded = []
        try:
            while True:
                yielded.append(settle(next(obj)))
        except StopIteration as stop:
            returned = settle(stop.value)
        return Structured(type_name(obj), {"yielded": yielded, "returned": returned})
    if type(obj) is list:
        return [settle(item) for item in obj]
    if type(obj) is tuple:
        return tuple(settle(item) for item in obj)
    if type(obj) is dict:
        return {key: settle(value) for key, value in obj.items()}
    return obj


def to_plain(obj: Any, leaf: Callable[[torch.Tensor], Any] | None = None) -> Any:
    """Tensors (detached copies), builtins and containers; other objects become records.
    ``leaf(tensor)``: what stands for each tensor instead of its copy (the same structure
    with something else at the tensors: ``semantics.py``'s taint marks)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if leaf is None else leaf(obj)
    if isinstance(obj, Structured):
        return Structured(obj.type, to_plain(obj.fields, leaf))
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        return obj
    if isinstance(obj, torch.dtype | torch.device | torch.Size):
        return obj
    if isinstance(obj, dict):
        items = {key if isinstance(key, str | int) else repr(key): to_plain(v, leaf)
                 for key, v in obj.items()}
        return items if type(obj) is dict else Structured(type_name(obj), items)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return Structured(type_name(obj), {f: to_plain(getattr(obj, f), leaf) for f in obj._fields})
    if isinstance(obj, list | tuple):
        converted = [to_plain(v, leaf) for v in obj]
        return converted if type(obj) is list else tuple(converted)
    if is_dataclass(obj) and not isinstance(obj, type):
        return Structured(type_name(obj), {f.name: to_plain(getattr(obj, f.name), leaf)
                                       for f in fields(obj)})
    return Opaque(type_name(obj), repr(obj)[:500])


def type_name(obj: Any) -> str:
    """``module.QualifiedName`` of an object's type."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def module_state(module: types.ModuleType | None,
                 installed: Set[str] = frozenset()) -> dict[str, object]:
    """The data a module holds at top level (globals rebound, lists appended to, counters),
    without its functions, classes, imported modules and dunder names, and without the
    names the compiler ``installed`` there (see ``compiler_globals``)."""
    if module is None:
        return {}
    skipped = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
               logging.Logger)
    return {name: to_plain(value) for name, value in vars(module).items()
            if not name.startswith("__") and not isinstance(value, skipped)
            and not callable(value) and name not in installed}


@contextlib.contextmanager
def compiler_globals() -> Iterator[set[str]]:
    """The names Dynamo installs in a module's globals while compiling inside the block
    (compiled functions, resumed frames, the result of a function marked constant):
    compiler bookkeeping, not program state. Dynamo installs them through two methods of
    ``OutputGraph``; each call is watched for the globals it adds."""
    from torch._dynamo.output_graph import OutputGraph

    names: set[str] = set()
    saved = {method: getattr(OutputGraph, method)
             for method in ("install_global_unsafe", "register_attr_or_module")}

    def watching(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(graph: OutputGraph, *args: Any, **kwargs: Any) -> Any:
            scope = graph.global_scope
            before = set(scope)
            try:
                return original(graph, *args, **kwargs)
            finally:
                names.update(set(scope) - before)
        return call

    for method, original in saved.items():
        setattr(OutputGraph, method, watching(original))
    try:
        yield names
    finally:
        for method, original in saved.items():
            setattr(OutputGraph, method, original)


def tensors(obj: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside nested containers and dataclasses."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from tensors(value)
    elif isinstance(obj, list | tuple):
        for value in obj:
            yield from tensors(value)
    elif is_dataclass(obj) and not isinstance(obj, type):
        for item in fields(obj):
            yield from tensors(getattr(obj, item.name))


def track_input_grads(inputs: Any) -> list[torch.Tensor]:
    """Make floating input tensors require grad, so their gradients can be compared."""
    tracked = [t for t in tensors(inputs) if t.is_floating_point() and not t.requires_grad]
    for tensor in tracked:
        tensor.requires_grad_(True)
    return tracked


def gradients(output: Any, module: torch.nn.Module | None, inputs: list[torch.Tensor],
              backward: Callable[[torch.Tensor], object] | None = None
              ) -> dict[str, object] | None:
    """Backward through a fixed projection of the floating outputs: input and parameter grads.

    The projection is drawn in float32 whatever the output's dtype, so a float64 reference
    run projects with exactly the same numbers. ``backward(loss)`` runs the backward pass
    (``loss.backward()`` by default; a compiled run with Compiled Autograd passes a compiled
    caller)."""
    outputs = [t for t in tensors(output) if t.is_floating_point() and t.requires_grad]
    if not outputs:
        return None
    generator = torch.Generator().manual_seed(GRAD_PROJECTION_SEED)
    try:
        # Autograd may refuse already when an output is used (a view of a multi-output op
        # whose base was modified in place): that is the program's backward failing too.
        loss = sum((t * torch.randn(t.shape, generator=generator).to(t.dtype)).sum()
                   for t in outputs)
        assert isinstance(loss, torch.Tensor)  # a sum of at least one tensor, never 0
        (backward or call_backward)(loss)
    except RuntimeError as error:
        return {"backward_error": str(error)[:500]}
    grads: dict[str, object] = to_plain(live_gradients(module, inputs))
    return grads


def live_gradients(module: torch.nn.Module | None, inputs: list[torch.Tensor]
                   ) -> dict[str, torch.Tensor | None]:
    """The ``.grad`` of each tracked input (``input0``, ...) and parameter, not copied."""
    grads = {f"input{i}": t.grad for i, t in enumerate(inputs)}
    if module is not None:
        grads.update({name: p.grad for name, p in module.named_parameters()})
    return grads


def call_backward(loss: torch.Tensor) -> None:
    """``loss.backward()``: the eager backward pass, and what a compiled caller traces."""
    loss.backward()  # type: ignore[no-untyped-call]  # torch leaves it unannotated


def _compiler_folders() -> tuple[str, ...]:
    """The folders of torch.compile's own code (Dynamo, Inductor, AOT autograd)."""
    folder = Path(torch.__file__).parent
    return tuple(str(folder / part) for part in ("_dynamo", "_inductor", "_functorch"))


def is_compiler_warning(warning: Any) -> bool:
    """A warning torch.compile itself raised (Dynamo's diagnostics, deprecations inside
    torch), not one the program raised, even through a stacklevel that points into torch."""
    return warning.filename.startswith(_compiler_folders()) or (
        warning.filename.startswith(str(Path(torch.__file__).parent))
        and issubclass(warning.category, DeprecationWarning))


class ProgramStream(io.StringIO):
    """Captures what the program writes to stdout or stderr. torch's own log handlers write
    there too (their stream may be bound to whatever ``sys.stderr`` was when torch set them
    up); those records are the compiler's diagnostics, not the program's output."""

    def __init__(self, diagnostics: list[str], real: TextIO | None = None):
        super().__init__()
        self.diagnostics = diagnostics
        self.real = real  # the stream replaced, for code that needs a file descriptor

    def fileno(self) -> int:
        """The replaced stream's descriptor: what is written there directly (compiler
        subprocesses, C code) is not the program's Python-level output anyway."""
        if self.real is None:
            raise io.UnsupportedOperation("fileno")
        return self.real.fileno()

    def write(self, text: str) -> int:
        if _from_torch_logging() or _from_torch_compiler():
            self.diagnostics.append(text)
            return len(text)
        return super().write(text)


def _from_torch_logging() -> bool:
    """Is the current write done by a logging handler emitting one of torch's records?"""
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        record = frame.f_locals.get("record") if frame.f_code.co_name in (
            "emit", "handle", "callHandlers") else None
        if isinstance(record, logging.LogRecord):
            return record.name == "torch" or record.name.startswith("torch.")
        frame = frame.f_back
    return False


def _from_torch_compiler() -> bool:
    """Is the current write made by torch.compile's own code? Inductor writes its
    autotuning statistics to ``sys.stderr`` directly (``max_autotune``: "Autotune Choices
    Stats: ..."), which only the compiled run does; the program's own prints run in its
    frames (a print Dynamo defers runs eagerly, in the program's code)."""
    frame: types.FrameType | None = sys._getframe(2)
    return frame is not None and frame.f_code.co_filename.startswith(_compiler_folders())


class PrintedRecord(TypedDict):
    """What a run printed (``Printed.observed``): ``stdout``, ``stderr``, the program's
    ``warnings``."""

    stdout: str
    stderr: str
    warnings: list[str]


class Printed:
    """What a run printed and warned: part of its observable behaviour (and kept off the
    oracle's own output). The compiler's own warnings and log lines go to ``diagnostics``
    instead. Hugging Face's once-per-process ``warning_once`` is reset so every run logs
    alike."""

    def __init__(self) -> None:
        self.diagnostics: list[str] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Printed:
        import warnings

        once = getattr(logging.Logger, "warning_once", None)
        if once is not None and hasattr(once, "cache_clear"):
            once.cache_clear()
        self._out, self._err = (ProgramStream(self.diagnostics, sys.stdout),
                                ProgramStream(self.diagnostics, sys.stderr))
        self._caught = self._stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        self._stack.enter_context(contextlib.redirect_stdout(self._out))
        self._stack.enter_context(contextlib.redirect_stderr(self._err))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def observed(self) -> PrintedRecord:
        """``stdout``, ``stderr`` and the program's ``warnings``, in order."""
        warned: list[str] = []
        for caught in self._caught:
            text = f"{caught.category.__name__}: {caught.message}"
            (self.diagnostics if is_compiler_warning(caught) else warned).append(text)
        return {"stdout": _neutral(self._out.getvalue()),
                "stderr": _neutral(self._err.getvalue()),
                "warnings": [_neutral(text) for text in warned]}


# ``tensor(..., grad_fn=<SumBackward0>)``: the autograd node's name is bookkeeping that any
# compiled run changes (CompiledFunctionBackward, or the clone a deferred print snapshots);
# gradients themselves are compared apart. Whether a printed tensor has a grad_fn still counts.
_GRAD_FN = re.compile(r"grad_fn=<\w+>")


def _neutral(text: str) -> str:
    """Printed text with autograd node names blanked (see ``_GRAD_FN``)."""
    return _GRAD_FN.sub("grad_fn=<...>", text)


class LineTracer:
    """Records executed lines of the given files (edit coverage), only while active."""

    def __init__(self, files: tuple[str, ...]):
        self.files = {str(f) for f in files}  # absolute, as imported from the resolved root
        self.covered: dict[str, set[int]] = {}

    def __enter__(self) -> LineTracer:
        if self.files:
            sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.files:
            sys.settrace(None)

    def _global(self, frame: types.FrameType, event: str, arg: object) -> _Tracer | None:
        filename = frame.f_code.co_filename
        if filename in self.files:
            lines = self.covered.setdefault(filename, set())
            lines.add(frame.f_lineno)

            def local(frame: types.FrameType, event: str, arg: object) -> _Tracer:
                if event == "line":
                    lines.add(frame.f_lineno)
                return local
            return local
        return None
