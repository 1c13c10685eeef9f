"""A campaign's finding folder, read for a report: the record, the program the script runs,
its target, the settings and the differences that decided the verdict.

The program is the smallest one the folder holds: the minimiser's (``reduced/tree/``, or the
program part of a ``minimal.py`` that ``eqrewrite reduce`` wrote), else the program as it
diverged (``tree/``, ``rewritten.py`` or ``program.py``, as the record's ``tree`` says).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from .. import formats
from ..formats import (
    FindingRecord,
    FormatError,
    OracleFindingRecord,
    Recipe,
    SettingsRecord,
    TargetRecord,
)
from ..minimising.standalone import FLOATING_KINDS, program_of, uses_reference


class ReportError(Exception):
    """A folder that is not a finding the report can use (exit 2)."""


@dataclass(frozen=True)
class Finding:
    """What a report needs to know about one finding."""

    folder: Path
    record: FindingRecord            # finding.json
    program: str                     # the program the script runs
    source: str                      # where it came from, relative to the folder
    target: TargetRecord             # form, attribute, inputs, has_init_inputs
    settings: SettingsRecord         # the effective compile settings
    differences: tuple[tuple[str, str, str], ...]  # (path, kind, message) of the verdict
    reference: str                   # which side the float64 reference agreed with, or ""

    @property
    def crash(self) -> bool:
        return self.record.get("class") == "compile-crash" or self.record.get(
            "verdict") == "compile-error"

    @property
    def kinds(self) -> list[str]:
        return [kind for _, kind, _ in self.differences]

    @property
    def reduced(self) -> bool:
        """Is the program the minimiser's (not the one the record's messages are about)?"""
        return self.source.startswith("reduced/") or self.source == "minimal.py"

    @property
    def headline(self) -> str:
        """The finding in one line: the first difference as recorded when the program is the
        one it was recorded for, else what kind of difference it is."""
        if self.differences and not self.reduced:
            return self.differences[0][2]
        return difference_phrase(self)

    def recipe(self, grad_inputs: bool, **changes: Any) -> Recipe:
        """The minimal script's recipe: the recorded settings, unless ``settings=`` (a dict
        of overrides) or another field is given."""
        settings: SettingsRecord = {**self.settings, **changes.pop("settings", {})}
        inference = bool(settings.get("inference"))
        recipe = Recipe(
            target=self.target, settings=settings, seed=0,
            grad_inputs=grad_inputs and not inference,
            grads=any("['grads']" in path for path, _, _ in self.differences),
            strict=bool(settings.get("strict")),
            scale=float(settings.get("tolerance_scale") or 1.0),
            extra_paths=backend_paths(str(settings["backend"])), state=None,
            headline=self.headline, torch_version=str(self.record.get("torch", "?")),
            differences=tuple((path, kind) for path, kind, _ in self.differences),
            reference=uses_reference(self.kinds, self.reference))
        return replace(recipe, **changes)


def load(folder: Path) -> Finding:
    """The finding in ``folder`` (a campaign's ``findings/<name>/``)."""
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder")
    try:
        record = formats.read_finding(folder)
    except FormatError as error:
        raise ReportError(str(error)) from None
    source, program = _program(folder, record)
    oracle = record.get("oracle") or {}
    settings: SettingsRecord = {
        "backend": "inductor", "mode": None, "dynamic": None, "fullgraph": False,
        "inductor_config": [], "dynamo_config": [], "strict": False, "raises": False,
        "tolerance_scale": 1.0, "inference": False}
    campaign = record.get("settings") or {}  # its options; of the settings only the backend
    if "backend" in campaign:
        settings["backend"] = str(campaign["backend"])
    settings.update(oracle.get("settings") or {})
    if source.startswith(f"{formats.REDUCED}/") or source == formats.MINIMAL:
        # The minimiser drops the settings the finding does not need: minimal.py and the
        # reduced reproducer compile without them, and so must every run of the report.
        settings.update(_reduced_settings(folder))
    deciding = _deciding(record)
    differences = tuple((str(d.get("path", "result")), str(d.get("kind", "?")),
                         str(d.get("message", ""))) for d in deciding.get("differences") or ())
    evidence = deciding.get("evidence") or {}
    return Finding(folder.resolve(), record, program, source,
                   _target(program, str(oracle.get("target", "")), source), settings,
                   differences, str(evidence.get("reference") or ""))


def _reduced_settings(folder: Path) -> SettingsRecord:
    """The compile settings of the reduced reproducer (``reduced/repro.py``'s ``SETTINGS``),
    as the finding's settings dict; empty when there is none."""
    try:
        tree = ast.parse((folder / formats.REDUCED / formats.SCRIPT).read_text(
            encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == "SETTINGS" for t in node.targets)):
            try:
                found = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords
                         if k.arg is not None}
            except ValueError:
                return {}
            # CompileSettings' keywords: the record's fields, its switch tables as lists.
            return cast(SettingsRecord, {
                key: [list(pair) for pair in value] if key.endswith("_config") else value
                for key, value in found.items()})
    return {}


def _program(folder: Path, record: FindingRecord) -> tuple[str, str]:
    """``(where, text)`` of the smallest program the folder holds."""
    name = str(record.get("file") or "")
    candidates = []
    if name:
        candidates.append(Path(formats.REDUCED) / formats.TREE / name)
    candidates.append(Path(formats.MINIMAL))
    if name:
        candidates.append(Path(formats.TREE) / name)
    candidates += [Path(formats.REWRITTEN)] if record.get("tree") == "rewritten" else []
    candidates.append(Path(formats.PROGRAM))
    for relative in candidates:
        try:
            text = (folder / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if relative.name == formats.MINIMAL:
            found = program_of(text)
            if found is None:  # written by hand, or by someone else: not ours to cut
                continue
            text = found
        try:
            ast.parse(text)
        except SyntaxError as error:
            raise ReportError(f"{folder / relative}:{error.lineno}: syntax error: "
                              f"{error.msg}") from None
        return relative.as_posix(), text
    raise ReportError(f"{folder}: no program (program.py, tree/, minimal.py)")


def _deciding(record: FindingRecord) -> OracleFindingRecord:
    """The oracle's finding that carries the verdict, in the tree where it was seen."""
    oracle = record.get("oracle") or {}
    verdict = oracle.get("verdict") or record.get("verdict")
    found = [f for f in oracle.get("findings") or [] if f.get("verdict") == verdict]
    tree = str(record.get("tree") or "original")
    first: OracleFindingRecord = found[0] if found else {}
    return next((f for f in found if str(f.get("right", "")).startswith(tree)), first)


def _target(program: str, recorded: str, source: str) -> TargetRecord:
    """The target as the worker records it, read from the program's definitions."""
    tree = ast.parse(program)
    defined = {node.name: node for node in tree.body
               if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    attribute = recorded.rpartition("::")[2]
    if attribute not in defined:
        attribute = next((name for name in ("Program", "program", "Model") if name in defined),
                         "")
    if not attribute:
        raise ReportError(f"{source}: no target (the recorded {recorded or 'target'} is not "
                          "defined in it)")
    if "get_inputs" in defined:
        inputs = "get_inputs"
    elif "inputs" in assigned:
        inputs = "inputs"
    else:
        raise ReportError(f"{source}: no get_inputs() and no inputs: the target's inputs")
    return {"form": "module" if isinstance(defined[attribute], ast.ClassDef) else "function",
            "attribute": attribute, "inputs": inputs,
            "has_init_inputs": "get_init_inputs" in defined}


def backend_paths(backend: str) -> tuple[str, ...]:
    """Folders to put on sys.path so a ``module:function`` backend imports in the script."""
    if ":" not in backend:
        return ()
    try:
        spec = importlib.util.find_spec(backend.partition(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return ()
    if spec is None or spec.origin is None:
        return ()
    origin = Path(spec.origin)
    return (str(origin.parent.parent if origin.name == "__init__.py" else origin.parent),)


_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
              ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "pow",
              ast.MatMult: "matmul", ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or",
              ast.BitXor: "bitwise_xor", ast.LShift: "bitwise_left_shift",
              ast.RShift: "bitwise_right_shift"}


def ops_in(program: str, ops: list[str], target: str) -> list[str]:
    """The ops of ``ops`` the target (``target``: its class or function) calls
    (``torch.fmin``, ``x.clamp_``, ``F.gelu``, ``a * b``), in the order of ``ops``."""
    called = set()
    definitions = [node for node in ast.parse(program).body
                   if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == target]
    for node in (inner for definition in definitions for inner in ast.walk(definition)):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else (
                function.id if isinstance(function, ast.Name) else "")
            called.add(name.rstrip("_"))
        elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _OPERATORS:
            called.add(_OPERATORS[type(node.op)])
    return [op for op in ops if op in called or op.rstrip("_") in called]


def deciding(finding: Finding) -> tuple[str, str, str] | None:
    """The difference a title should name: a failing backward, then a wrong value (exact
    kinds before floating ones, as the script compares them), then strides, then what was
    printed (warnings): a mean of 0 against NaN is the finding even when a warning went
    missing beside it."""
    if not finding.differences:
        return None
    return min(finding.differences, key=_severity)


def _severity(difference: tuple[str, str, str]) -> tuple[int, int]:
    path, kind, message = difference
    if kind == "structure" and "backward_error" in message:
        return (0, 0)
    if "['printed']" in path:
        return (3, 0)
    if kind == "stride":
        return (2, 0)
    return (1, int(kind in FLOATING_KINDS))


def category(finding: Finding, status: str = "") -> str:
    """``crash``, ``wrong result`` or ``cosmetic`` (strides or printed output alone), from
    the record and, when known, the status of the script's run."""
    if finding.crash or status == "raises":
        return "crash"
    difference = deciding(finding)
    if difference is not None and _severity(difference)[0] >= 2:
        return "cosmetic"
    return "wrong result"


def difference_phrase(finding: Finding, error: str = "") -> str:
    """The kind of difference that decided the verdict, in a few words (``error``: what
    compiling raised, when known)."""
    if finding.crash:
        return f"compiled call raises {_short(error)}" if error else (
            "compiled call raises where eager runs")
    difference = deciding(finding)
    if difference is None:
        return "compiled and eager disagree"
    path, kind, message = difference
    area = area_of(path)
    if kind == "structure" and "backward_error" in message:
        return "compiled backward raises where eager's runs"
    if kind == "exception":
        return "does not raise where eager raises" if message.endswith(
            "vs no exception") else "raises differently from eager"
    if kind in ("nan", "inf"):
        return _special_phrase(area, kind, message)
    words = {"stride": "strides differ", "exact": "values (compared exactly) differ",
             "signed_zero": "signs of zero differ", "nan_sign": "signs of NaN differ",
             "value": "values differ"}
    return f"{area} {words.get(kind, kind + ' differs')} from eager"


_EXPECTED_GOT = re.compile(r"expected (-?[\w.+-]+), got (-?[\w.+-]+)")


def _special_phrase(area: str, kind: str, message: str) -> str:
    """Which side is NaN or infinite, read from the recorded ``expected X, got Y`` (eager's
    value first): the side is never guessed."""
    found = _EXPECTED_GOT.search(message)
    if found is None:
        special = "NaN" if kind == "nan" else "infinity"
        return f"{special} positions in the {area} differ from eager"
    eager, compiled = (_value_class(v) for v in found.groups())
    return f"{area} is {compiled} where eager's is {eager}"


def _value_class(text: str) -> str:
    """NaN, inf, -inf, or "finite" for a number as the oracle printed it."""
    bare = text.lstrip("+")
    if bare.lstrip("-").lower() == "nan":
        return "NaN"
    if bare.lower() in ("inf", "-inf"):
        return bare.lower()
    return "finite"


def area_of(path: str) -> str:
    for key, name in (("['grads']", "gradient"), ("['inputs_after']", "inputs after the call"),
                      ("['state_after']", "module state"), ("['printed']", "printed output")):
        if key in path:
            return name
    return "output"


def _short(error: str, limit: int = 90) -> str:
    error = re.sub(r"^torch\._\w+\.exc\.", "", error.strip())
    return error if len(error) <= limit else error[:limit - 1] + "…"
