"""One finding per root cause: a campaign's findings grouped by what caused them.

A campaign names a finding by the generated program (its class, the kinds of divergence and
the table ops that feed them), so one compiler bug met by five programs is five findings. Once
findings are reduced, the cause shows in the reduced program instead, and that is what this
module reads (``minimal.py``, else ``program.py``: torch is never imported):

- for a **crash**, the compiler's own error text with the wrapper removed
  (``BackendCompilerFailed: backend='inductor' raised:``), numbers, names and paths
  normalised, and the layer that raised it (Dynamo, fake tensors, AOT autograd, Inductor);
- for a compiled **backward that raises** where eager's runs, that, and whether an in-place
  write follows a graph break; for a **gradient only one side has** (compiled materialises
  one eager leaves ``None``, or loses one eager gives), which side;
- for **strides only** (the values agree), the families of the operations that made the
  output (pointwise, indexing, reduction... as the generator's table tags them): Inductor
  decides an output's layout per family;
- for a **wrong result**, the operations the reduced program calls (views apart from
  computations), the classes of dtypes it uses (low precision, integer, bool), whether it
  holds special values (NaN, infinities, empty tensors) or gradients, and which kinds of
  values differ (``output/exact``, ``grads/value``).

Findings with the same root cause are merged: the one with the smallest program stays the
representative (its report is the one to file) and lists the seeds of all of them.
``merge`` writes the groups (a campaign's ``root_causes.json``) and records each finding's
``root_cause`` (and ``duplicate_of``) in its ``finding.json``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import formats
from ..formats import DifferenceRecord, FindingRecord
from .outcome import normalise_error

ROOT_CAUSES = "root_causes.json"
PROGRAM_MARKER = "# -- the program "  # where minimal.py's program starts
# Calls that shape or place data rather than compute: a view chain is part of a cause, the
# exact views are not (``x.t()`` and ``x.transpose(0, 1)`` are one layout).
_VIEWS = frozenset({
    "view", "reshape", "expand", "expand_as", "broadcast_to", "as_strided", "unfold", "t",
    "transpose", "permute", "movedim", "swapaxes", "diagonal", "narrow", "select", "squeeze",
    "unsqueeze", "flatten", "unflatten", "contiguous", "split", "chunk", "unbind", "view_as",
    "__getitem__"})
# Calls that make inputs or constants: not part of any cause by their name.
_MAKERS = frozenset({
    "tensor", "randn", "rand", "randint", "zeros", "ones", "full", "arange", "empty",
    "manual_seed", "Tensor", "get_inputs", "super", "__init__", "Parameter", "float", "int",
    "range", "len", "print", "compile", "partial", "clone"})
# Families of operations as the generator's table tags them: an output's layout is decided
# per family (every pointwise op follows one rule), so a stride difference is a cause of
# the family, not of the op.
_FAMILIES = ("indexing", "reduction", "scan", "matmul", "convolution", "pooling",
             "normalisation")
# Operators as the torch functions they call: ``x + y`` and ``torch.add(x, y)`` are one op.
_OPERATOR_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor", ast.LShift: "bitwise_left_shift",
    ast.RShift: "bitwise_right_shift", ast.Invert: "bitwise_not", ast.USub: "neg",
    ast.Not: "", ast.UAdd: "", ast.Lt: "lt", ast.Gt: "gt", ast.LtE: "le", ast.GtE: "ge",
    ast.Eq: "eq", ast.NotEq: "ne", ast.Is: "", ast.IsNot: "", ast.In: "", ast.NotIn: "",
    ast.And: "", ast.Or: ""}
_LOW, _INTEGER = ("float16", "bfloat16", "half"), ("int8", "uint8", "int16", "int32", "int64",
                                                  "long", "int", "short")
_WRAPPER = re.compile(r"^\w*(BackendCompilerFailed|InternalTorchDynamoError|TorchRuntimeError)"
                      r": backend='\w+' raised:\s*|^\w+: backend='\w+' raised:\s*")
_LAYERS = (("fake tensor", "fake tensors"), ("functionalization", "AOT autograd"),
           ("aot_autograd", "AOT autograd"), ("AOT", "AOT autograd"),
           ("inductor", "Inductor"), ("Dynamo", "Dynamo"), ("dynamo", "Dynamo"))


@dataclass(frozen=True)
class RootCause:
    """What caused a finding, as far as its reduced program and record tell."""

    kind: str  # crash | backward-error | gradient-materialised | gradient-lost | layout |
    #            wrong-result
    layer: str                   # where it was raised (crashes), or ""
    error: str                   # the compiler's error, normalised (crashes)
    ops: tuple[str, ...]         # computations the program calls (wrong results)
    views: bool                  # the program reshapes or views before it computes
    dtypes: tuple[str, ...]      # low-precision | integer | bool
    values: tuple[str, ...]      # special | empty | gradients
    differences: tuple[str, ...]  # area/kind of every difference (wrong results)

    @property
    def key(self) -> str:
        text = json.dumps([self.kind, self.layer, self.error, self.ops, self.views,
                           self.dtypes, self.values, self.differences])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def describe(self) -> str:
        if self.kind == "layout":
            return "output strides differ from eager's for " + ", ".join(self.ops) + (
                " ops" + (" through views" if self.views else ""))
        if self.kind == "gradient-materialised":
            return "compiled gives a gradient to an input eager leaves without one"
        if self.kind == "gradient-lost":
            return "compiled leaves an input without the gradient eager gives it"
        if self.kind == "backward-error":
            return "the compiled backward raises where eager's runs (" + ", ".join(
                self.values) + ")"
        if self.kind == "crash":
            return f"crash in {self.layer or 'the compiler'}: {self.error}"
        parts = [", ".join(self.ops) or "no computation", *self.dtypes, *self.values]
        if self.views:
            parts.append("through views")
        return f"wrong result ({', '.join(self.differences)}) of " + ", ".join(parts)


@dataclass
class Group:
    """Findings of one root cause: the representative (smallest program) and the rest."""

    cause: RootCause
    folders: list[Path] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)

    @property
    def representative(self) -> Path:
        return min(self.folders, key=lambda folder: (program_size(folder), folder.name))


def root_cause(folder: Path) -> RootCause:
    """The root cause of one finding folder (``finding.json`` and its reduced program)."""
    record = formats.read_finding(folder)
    tree = ast.parse(_program_text(folder))
    calls = _calls(tree)
    text = ast.unparse(tree)
    dtypes = tuple(name for name, spelled in (("low-precision", _LOW), ("integer", _INTEGER))
                   if any(re.search(rf"\b(torch\.)?{s}\b", text) for s in spelled
                          if "." in s or s not in ("int", "long"))
                   or any(f".{s}()" in text for s in spelled))
    dtypes += ("bool",) if re.search(r"\btorch\.bool\b|\.bool\(\)", text) else ()
    values = tuple(name for name, pattern in (
        ("special", r"\bnan\b|\binf\b|float\('(-?inf|nan)'\)"),
        ("empty", r"\b(randn|rand|zeros|ones|empty|randint)\(\s*\(?\s*0\s*[,)]"),
        ("gradients", r"requires_grad|backward\(")) if re.search(pattern, text))
    crashed = record.get("class") == "compile-crash"
    error = _compiler_error(record) if crashed else ""
    kinds = tuple(record.get("kinds") or ())
    if not crashed and (side := _gradient_presence(record)):
        # A gradient only one side has: AOT autograd's handling of inputs no output depends
        # on differentiably (or of detached aliases), whatever computed the outputs.
        return RootCause(side, "", "", (), False, (), (), kinds)
    if not crashed and kinds and all(kind.endswith("/stride") for kind in kinds):
        # Only strides differ: the layout rule of the families of ops that made the output.
        families = _families()
        return RootCause("layout", "", "", tuple(sorted({
            families.get(name, name) for name in calls - _VIEWS - _MAKERS})),
            bool(calls & _VIEWS), (), (), kinds)
    if not crashed and _backward_raised(record):
        # Only the compiled backward raises: the cause is what the forward left behind for
        # it (an in-place write after a graph break), not the ops that fed the output.
        written = sorted(name for name in _method_names(tree) if name.endswith("_")
                         and not name.startswith("_"))
        return RootCause("backward-error", "", "", (), False, (), tuple(
            ["graph break"] * ("graph_break" in calls) + ["in-place"] * bool(written)), ())
    return RootCause(
        kind="crash" if crashed else "wrong-result",
        layer=_layer(record) if crashed else "",
        error=error,
        ops=() if crashed else tuple(sorted(calls - _VIEWS - _MAKERS)),
        views=bool(calls & _VIEWS) and not crashed,
        dtypes=() if crashed else dtypes,
        values=() if crashed else values,
        differences=() if crashed else tuple(record.get("kinds") or ()))


def merge(findings: Path, written: Path) -> list[Group]:
    """Group the finding folders under ``findings`` by root cause (compiler bugs and
    crashes; other classes are left alone), record it in each ``finding.json``, and write
    the groups to ``written`` (JSON: one entry per cause, representative first)."""
    groups: dict[str, Group] = {}
    for folder in sorted(p for p in findings.iterdir() if (p / formats.FINDING).is_file()):
        record = formats.read_finding(folder)
        if record.get("class") not in ("compiler-bug", "compile-crash"):
            continue
        cause = root_cause(folder)
        group = groups.setdefault(cause.key, Group(cause))
        group.folders.append(folder)
        group.seeds = sorted(set(group.seeds) | set(record.get("seeds") or []))
    ordered = sorted(groups.values(), key=lambda g: (g.cause.kind, g.representative.name))
    for group in ordered:
        _annotate(group)
    entries = [{"root_cause": g.cause.key, "cause": g.cause.describe(),
                "representative": g.representative.name,
                "duplicates": sorted(f.name for f in g.folders if f != g.representative),
                "seeds": g.seeds} for g in ordered]
    written.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    return ordered


def program_size(folder: Path) -> int:
    """Statements of the program the finding's reproducer runs (its reduced program when
    there is one): what the smallest reproducer is chosen by."""
    tree = ast.parse(_program_text(folder))
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.stmt)
               and not isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Import |
                                  ast.ImportFrom))


def _annotate(group: Group) -> None:
    chosen = group.representative
    for folder in group.folders:
        record = formats.read_finding(folder)
        record["root_cause"] = {"key": group.cause.key, "cause": group.cause.describe(),
                                "seeds": group.seeds}
        if folder == chosen:
            record.pop("duplicate_of", None)
        else:
            record["duplicate_of"] = chosen.name
        formats.write_finding(folder, record)


def _program_text(folder: Path) -> str:
    """The program of the reproducer: ``minimal.py`` up to the lines that run it, else the
    generated ``program.py``."""
    minimal = folder / formats.MINIMAL
    if minimal.is_file():
        text = minimal.read_text(encoding="utf-8")
        # The script's own exception hook comes before the program (standalone.py).
        text = text[text.find(PROGRAM_MARKER):] if PROGRAM_MARKER in text else text
        tree = ast.parse(text)
        kept = []
        for node in tree.body:  # the program, then get_inputs(); the harness follows
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                kept.append(node)
                if node.name == "get_inputs":
                    break
        if kept and kept[-1].name == "get_inputs":
            return "\n\n".join(ast.unparse(node) for node in kept)
    return (folder / formats.PROGRAM).read_text(encoding="utf-8")


def _calls(tree: ast.AST) -> set[str]:
    """Names of everything called, as methods or functions (``x.sign_()`` is ``sign``: an
    in-place op and its functional form are one computation), and indexing."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else (
                function.id if isinstance(function, ast.Name) else "")
            if name:
                names.add(name.rstrip("_") if not name.startswith("_") else name)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            continue  # a negative literal, not a negation
        elif isinstance(node, ast.BinOp | ast.UnaryOp | ast.AugAssign):
            names.add(_OPERATOR_OPS.get(type(node.op), ""))
        elif isinstance(node, ast.Compare):
            names.update(_OPERATOR_OPS.get(type(op), "") for op in node.ops)
        elif isinstance(node, ast.Subscript):
            names.add("__getitem__")
    return names - {""}


@functools.cache
def _families() -> dict[str, str]:
    """Op name (function, method, in-place method) -> its family in the generator's table."""
    from ..generate import default_table

    names: dict[str, str] = {}
    for spec in default_table().ops:
        family = next((tag for tag in spec.tags if tag in _FAMILIES), "pointwise")
        for name in (spec.call.rpartition(".")[2], spec.method, spec.inplace):
            if name:
                names[name.rstrip("_")] = family
    return names


def _gradient_presence(record: FindingRecord) -> str:
    """``gradient-materialised`` when every difference is a gradient compiled has and eager
    leaves ``None``, ``gradient-lost`` for the reverse, else ``""``."""
    messages = [d.get("message", "") for d in _deciding_differences(record)]
    if not messages or not all("['grads']" in m for m in messages):
        return ""
    if all("expected NoneType None, got Tensor" in m for m in messages):
        return "gradient-materialised"
    if all("expected Tensor" in m and "got NoneType" in m for m in messages):
        return "gradient-lost"
    return ""


def _deciding_differences(record: FindingRecord) -> list[DifferenceRecord]:
    return [d for f in (record.get("oracle") or {}).get("findings", [])
            if f.get("verdict") == record.get("verdict") for d in f.get("differences") or []]


def _backward_raised(record: FindingRecord) -> bool:
    """Whether the compiled run's backward raised where eager's did not."""
    differences = _deciding_differences(record)
    return bool(differences) and all("unexpected keys ['backward_error']" in d.get("message", "")
                                      for d in differences if "grads" in d.get("path", "")) and any(
        "grads" in d.get("path", "") for d in differences)


def _method_names(tree: ast.AST) -> set[str]:
    return {node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}


def _compiler_error(record: FindingRecord) -> str:
    """The compiler's error without the wrapper that names the backend."""
    detail = record.get("detail") or record.get("error") or ""
    text = detail.split("raised where eager did not: ", 1)[-1]
    while (stripped := _WRAPPER.sub("", text)) != text:
        text = stripped
    return normalise_error(re.sub(r"\s*\([^()]*:\d+ in [^()]*\)\s*$", "", text))


def _layer(record: FindingRecord) -> str:
    """Which part of the compiler raised, as the error says: the recorded first failing
    layer when a report measured it."""
    if record.get("layer"):
        return str(record["layer"])
    detail = record.get("detail") or ""
    if "worker killed" in detail or "SIGSEGV" in detail or "SIGABRT" in detail:
        return "the compiled code"
    if "InductorError" in detail or "LoweringException" in detail:
        return "Inductor"
    if "ViewMeta" in detail:
        return "AOT autograd"
    if "BackendCompilerFailed" in detail:
        for needle, layer in _LAYERS:
            if needle in detail.split("raised:", 1)[-1]:
                return layer
        return "the backend"
    if "TorchRuntimeError" in detail or "fake tensor" in detail:
        return "fake tensors"
    return "Dynamo"
