"""The minimiser's checking process: judges candidate source trees with a reproducer's own
copy of the oracle core, one after another, in one warm process.

Run as a script, ``python reduceworker.py REPRO_FOLDER TREES [CORE]`` (``TREES``: the folder
under which the candidate trees are written); it imports nothing
of eqrewrite. It loads the reproducer's ``repro.py`` as a module (so target, settings, seed,
weights and comparison options are the reproducer's own), then answers one JSON request per
line on stdin with one JSON line on the original stdout: the verdict, the differences, the
exceptions and the inputs' shapes and layouts. A request may name another ``backend`` (a
cheaper one that screens candidates), the compile ``settings`` the reduction kept and
``grad_inputs: false`` (settings the finding turned out not to need), an ``eager``
exception to screen with one eager run first, and the ``layout`` the inputs must keep
(checked once they are built, before any run); a ``probe`` request judges nothing but says
whether the program draws random numbers and gives its inputs as literals (``probe``).
Everything else written to stdout (the
compiler, the target) goes to stderr, so it cannot corrupt the answers. ``CORE`` is a folder
holding a newer ``_eqrewrite_oracle`` to use instead of the reproducer's, for folders written
before ``replay.judge`` existed.

The parent enforces the time limit by killing this process; it also dies with its parent.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:  # the messages' types; at run time this script imports no eqrewrite
    from ..formats import Answer, Description, InputRecord, Probe, SettingsRecord


def main(folder: Path, trees: Path, core: Path | None) -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Python put this file's folder (eqrewrite's oracle/minimising) first on sys.path: its
    # modules (reduce, standalone, ...) must not shadow a target's own imports.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    repro = _load(folder, core)
    from _eqrewrite_oracle import worker

    worker._die_with_parent()
    _answer(answers, _describe(repro))
    for line in sys.stdin:
        request = json.loads(line)
        started = time.perf_counter()
        answer: Answer | Probe
        try:
            answer = _check(repro, request, trees)
        except BaseException as error:  # noqa: BLE001 - a candidate's failure is an answer
            answer = {"error": _last_lines(error)}
        answer["seconds"] = round(time.perf_counter() - started, 3)
        _answer(answers, answer)


def _load(folder: Path, core: Path | None) -> Any:
    """The reproducer's script as a module (its ``__main__`` block does not run). Its names
    (``TARGET``, ``REQUEST``...) hold the vendored core's objects, untyped here."""
    if core is not None:
        sys.path.insert(0, str(core))
        importlib.import_module("_eqrewrite_oracle.replay")  # cached: repro.py gets this copy
    spec = importlib.util.spec_from_file_location("_eqrewrite_repro", folder / "repro.py")
    # A ``.py`` location always gets a spec with a source loader.
    assert spec is not None and spec.loader is not None
    repro: Any = importlib.util.module_from_spec(spec)
    before = len(sys.path)
    spec.loader.exec_module(repro)
    # repro.py puts its folder, its tree and the folders a custom backend imports from
    # first on sys.path: the last of these are what a standalone script needs too.
    added = sys.path[:len(sys.path) - before]
    repro.EXTRA_PATHS = [p for p in added if p not in (str(folder), str(repro.ROOT))]
    # Candidate trees come first on sys.path for each run; the reproducer's own tree must not
    # be importable at all, so that a candidate is judged on its own files only.
    sys.path[:] = [p for p in sys.path if p != str(repro.ROOT)]
    return repro


def _describe(repro: Any) -> Description:
    """What the parent needs to know about the reproducer, as plain JSON."""
    import torch
    from _eqrewrite_oracle import replay

    target, request = repro.TARGET, repro.REQUEST
    return {"ready": True, "root": str(repro.ROOT), "torch": torch.__version__,
            "judge": hasattr(replay, "judge"), "has_state": request.state is not None,
            "seed": request.seed, "strict": repro.OPTIONS.strict, "scale": repro.OPTIONS.scale,
            "target": {"name": target.name, "attribute": target.attribute,
                       "form": target.form.value,
                       "file": None if target.file is None else target.file.as_posix(),
                       "inputs": target.inputs, "has_init_inputs": target.has_init_inputs},
            # CompileSettings' fields (its switch tables become lists in JSON)
            "settings": cast("SettingsRecord", asdict(repro.SETTINGS)),
            "extra_paths": repro.EXTRA_PATHS,
            "fails": getattr(repro, "FAILS", "compiler-bug")}


def _check(repro: Any, asked: dict[str, Any], trees: Path) -> Answer | Probe:
    """Judge the target in the tree ``asked["root"]``. When ``asked`` names the exception
    the finding's eager run raised (``eager``, None for none), one eager run first rejects
    candidates that already differ there, without compiling them (and is the judgement's
    first eager run). When it names the finding's differences (``differences``: ``[path,
    kind]``, the first one needed, none other allowed), a candidate whose eager and compiled
    runs differ otherwise is rejected before the triage (float64 reference, perturbed runs,
    emulated rounding) runs anything."""
    from _eqrewrite_oracle import replay
    from _eqrewrite_oracle.worker import Session

    root = Path(asked["root"])
    _forget([trees, *_JUDGED])  # a module of an earlier tree would shadow this one's
    if not root.resolve().is_relative_to(trees.resolve()):
        _JUDGED.add(root.resolve())
    request = _request(repro, asked)
    if asked.get("probe"):
        return probe(root, request)
    if "layout" in asked:  # shrunk inputs: built, not run, when their layout class changed
        try:
            built = layout_class(_inputs(root, request))
        except Exception as error:  # noqa: BLE001 - the candidate does not build
            return {"error": _last_lines(error), "screened": "eager"}
        if built != asked["layout"]:
            return {"error": "the inputs' layout changed", "screened": "layout"}
    if "eager" in asked:  # what it rejects is marked "screened": nothing was compiled
        try:
            first = Session({"original": str(root)}).run(request)
        except Exception as error:  # noqa: BLE001 - the candidate does not build
            return {"error": _last_lines(error), "screened": "eager"}
        if first.failure is not None:
            return {"error": first.failure.message, "screened": "eager"}
        if _exception(first) != asked["eager"]:
            raised = first.exception.describe() if first.exception else "nothing"
            return {"error": f"the eager run raised {raised}", "screened": "eager"}
    options: dict[str, Any] = {}
    parameters = inspect.signature(replay.judge).parameters  # an older core has neither
    if "eager" in asked and "eager" in parameters:
        options["eager"] = first
    if asked.get("differences") and "wanted" in parameters:
        allowed = {tuple(d) for d in asked["differences"]}
        needed = tuple(asked["differences"][0])
        options["wanted"] = lambda found: needed in {(d.path, d.kind) for d in found} and {
            (d.path, d.kind) for d in found} <= allowed
        if "wanted_forward" in parameters:  # before the backward: its compile is skipped
            options["wanted_forward"] = options["wanted"] if not str(needed[0]).startswith(
                GRADIENTS) else lambda found: {(d.path, d.kind) for d in found} <= allowed
    try:
        judgement = replay.judge(str(root), request, repro.OPTIONS, **options)
    except replay.Unwanted as unwanted:
        forward = getattr(unwanted, "before_backward", False)  # an older core: never
        return {"error": f"other differences: {unwanted}",
                "screened": "forward" if forward else "differences"}
    eager, compiled = judgement.eager, judgement.compiled
    return {"verdict": judgement.verdict.value, "detail": judgement.detail,
            "differences": [[d.path, d.kind, d.message] for d in judgement.differences],
            "exceptions": [_exception(eager), _exception(compiled)],
            "compiled_error": _error(compiled),
            # Undefined behaviour the program holds besides (an older core has none to say)
            "undefined": list(getattr(judgement, "undefined", ())),
            "grad_inputs": bool(eager and eager.grad_inputs),
            "inputs": _inputs(root, request)}


def _request(repro: Any, asked: dict[str, Any]) -> Any:
    """The reproducer's request for the candidate: without the saved weights unless asked,
    with the compile settings the reduction kept (``settings``: the fields that changed),
    without input gradients when asked (``grad_inputs``: false), and with a cheaper
    ``backend`` when it screens the candidate."""
    request = repro.REQUEST if asked["state"] else replace(repro.REQUEST, state=None)
    settings = request.settings
    if asked.get("settings"):  # JSON made the switch tables lists of lists
        changed = {key: tuple(map(tuple, value)) if key.endswith("_config") else value
                   for key, value in asked["settings"].items()}
        settings = replace(settings, **changed)
    if asked.get("backend"):
        settings = replace(settings, backend=asked["backend"])
    request = replace(request, settings=settings)
    if asked.get("grad_inputs") is False:
        request = replace(request, grad_inputs=False)
    return request


# Inputs written as literals (``torch.tensor([...])``) at most this many elements each, and
# in all: larger ones are not what "small explicit literals" means.
LITERAL_ELEMENTS = 32
LITERAL_TOTAL = 64


def probe(root: Path, request: Any) -> Probe:
    """What the script needs to know about the candidate beside its verdict, from one
    build and one eager call: whether it draws random numbers from torch's generators
    (``rng``: else the script needs no seed), what ``get_inputs()`` returns
    (``container``), and each input as a literal (``literals``; None for one that is
    not small, or has no literal that keeps its layout)."""
    import torch
    from _eqrewrite_oracle.worker import Session

    session = Session({"original": str(root)})
    session.enter("original")
    torch.manual_seed(request.seed)
    seeded = _generators()
    fn, inputs, _, _ = session.build(request)
    drew = _generators() != seeded
    values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
    literals = [_literal(value) for value in values]  # before the call may change them
    if sum(_elements(value) for value in values) > LITERAL_TOTAL:
        literals = [None] * len(values)
    torch.manual_seed(request.seed)
    try:
        with torch.no_grad():
            fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)
    except Exception:  # noqa: BLE001, S110 - a finding may be what the call raises
        pass
    return {"rng": drew or _generators() != seeded, "container": type(inputs).__name__,
            "literals": literals}


def _generators() -> list[bytes]:
    """The states of torch's random generators (the CPU's, and CUDA's once it is used)."""
    import torch

    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        states += torch.cuda.get_rng_state_all()
    return [bytes(state.numpy().tobytes()) for state in states]


def _elements(value: object) -> int:
    import torch

    if isinstance(value, list | tuple):
        return sum(_elements(item) for item in value)
    return value.numel() if isinstance(value, torch.Tensor) else 1


def _literal(value: object) -> str | None:
    """Source text that makes ``value`` again, with ``torch`` for the torch module: a
    number, None, a list or tuple of such, or a small CPU tensor as ``torch.tensor(...)``
    (a permuted one as the permutation of one, so its layout class stays); None when there
    is none."""
    import torch

    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        return _float(value, torch.float64)
    if isinstance(value, list | tuple):
        items = [_literal(item) for item in value]
        if any(item is None for item in items):
            return None
        inside = ", ".join(item for item in items if item is not None)
        return f"[{inside}]" if isinstance(value, list) else f"({inside}{',' * (len(items) == 1)})"
    if not isinstance(value, torch.Tensor):
        return None
    return _tensor_literal(value)


_DEFAULT_DTYPES = ("torch.float32", "torch.int64", "torch.bool")


def _tensor_literal(value: Any) -> str | None:
    import torch

    if (value.layout != torch.strided or value.device.type != "cpu" or value.is_complex()
            or not 0 < value.numel() <= LITERAL_ELEMENTS or value.requires_grad
            or value.storage_offset() or type(value) is not torch.Tensor):
        return None
    dtype = "" if str(value.dtype) in _DEFAULT_DTYPES else f", dtype={value.dtype}"
    memory = _memory_format(value)
    if memory is not None:  # the usual spelling, and the values in their logical order
        return (f"torch.tensor({_nested(value.tolist(), value.dtype)}{dtype})"
                f".contiguous(memory_format=torch.{memory})")
    strides = value.stride()
    order = sorted(range(value.dim()), key=lambda d: (-strides[d], d))
    base = value.permute(order)
    if not base.is_contiguous():  # overlapping or with gaps (expanded, sliced): no literal
        return None
    inverse = tuple(order.index(d) for d in range(value.dim()))
    after = "" if inverse == tuple(range(value.dim())) else (
        ".t()" if value.dim() == 2 else f".permute{inverse}")
    if after and base.permute(inverse).stride() != value.stride():
        return None
    return f"torch.tensor({_nested(base.tolist(), value.dtype)}{dtype}){after}"


def _memory_format(value: Any) -> str | None:
    """``channels_last`` (``channels_last_3d``) for a tensor laid out so and not contiguous,
    when making it so again gives its strides."""
    import torch

    formats = {4: "channels_last", 5: "channels_last_3d"}
    name = formats.get(value.dim())
    if name is None or value.is_contiguous():
        return None
    memory = getattr(torch, name)
    if not value.is_contiguous(memory_format=memory):
        return None
    again = torch.empty(value.shape, dtype=value.dtype).contiguous(memory_format=memory)
    return name if again.stride() == value.stride() else None


def _nested(values: Any, dtype: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    if isinstance(values, float):
        return _float(values, dtype)
    return repr(values)


def _float(value: float, dtype: Any) -> str:
    """The shortest decimal that reads back as ``value`` in ``dtype`` (with a point, so
    that a list of them stays floating), or ``float('nan')``/``float('inf')``."""
    import math

    import torch

    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if math.isnan(value) or math.isinf(value):
        return f"{sign}float('{'nan' if math.isnan(value) else 'inf'}')"
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if torch.tensor(float(text), dtype=dtype).item() == value:
            break
    return text if any(c in text for c in ".en") else f"{text}.0"


def _error(result: Any) -> str | None:
    """The run's exception on one line (the cause joined to a wrapping first line)."""
    if result is None or result.exception is None:
        return None
    exception = result.exception
    described: str = (exception.describe() if hasattr(exception, "describe")
                      else exception.message)
    return described


# The trees judged in this process besides the candidates' (the reproducer's own source tree,
# when the baseline needed it): their modules share the target's module name too.
_JUDGED: set[Path] = set()
GRADIENTS = "result['grads']"  # where the differences of gradients are


def _forget(folders: list[Path]) -> None:
    """Drop modules imported from earlier candidates and from the other trees judged here:
    they share the target's module name, and one left in ``sys.modules`` would be judged
    in place of the candidate (a reduction once kept an empty file that way)."""
    prefixes = tuple(str(folder.resolve()) for folder in folders)
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None) or ""
        if location and _resolved(location).startswith(prefixes):
            del sys.modules[name]
    importlib.invalidate_caches()


@functools.cache
def _resolved(location: str) -> str:
    """``location`` with its links resolved, once per path: resolving the thousands of
    torch modules' files for every candidate was most of a compiled candidate's own time."""
    return str(Path(location).resolve())


def _exception(result: Any) -> str | None:
    return result.exception.type if result is not None and result.exception else None


def _inputs(root: Path, request: Any) -> list[InputRecord]:
    """Each input's dtype, rank, element count and layout class, as built for a run."""
    from _eqrewrite_oracle.worker import Session

    session = Session({"original": str(root)})
    session.enter("original")
    _, inputs, _, _ = session.build(request)
    values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
    return [_input(value) for value in values]


def layout_class(inputs: list[InputRecord]) -> list[InputRecord]:
    """The inputs as ``_inputs`` describes them, without their element counts: what shrinking
    an input must keep (dtype, rank, layout class)."""
    def strip(item: InputRecord) -> InputRecord:
        kept = item.copy()
        kept.pop("numel", None)
        if "items" in kept:
            kept["items"] = [strip(i) for i in kept["items"]]
        return kept
    return [strip(item) for item in inputs]


def _input(value: object) -> InputRecord:
    import torch

    if isinstance(value, list | tuple):
        items = [_input(item) for item in value]
        return {"type": type(value).__name__, "items": items,
                "numel": sum(item["numel"] for item in items)}
    if not isinstance(value, torch.Tensor):
        return {"type": type(value).__name__, "numel": 0}
    if value.layout != torch.strided:
        return {"type": "Tensor", "dtype": str(value.dtype), "dim": value.dim(),
                "numel": value.numel(), "layout": str(value.layout)}
    layout = {"contiguous": value.is_contiguous(),
              "channels_last": value.dim() == 4 and value.is_contiguous(
                  memory_format=torch.channels_last),
              "expanded": 0 in value.stride() and value.numel() > 1,
              "offset": value.storage_offset() > 0, "empty": value.numel() == 0}
    return {"type": "Tensor", "dtype": str(value.dtype), "dim": value.dim(),
            "numel": value.numel(), "layout": layout}


def _last_lines(error: BaseException) -> str:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(lines[-4:]).strip()[-2000:]


def _answer(stream: TextIO, answer: Description | Answer | Probe) -> None:
    stream.write(json.dumps(answer, default=str) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
