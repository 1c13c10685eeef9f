"""The operator table (``ops.yaml``): torch operations and the constraints on their arguments.

The generator has no code per operation. An ``OpSpec`` says how an operation is spelled
(function, method, operator), which subjects it accepts (dtype classes, rank, non-empty),
which arguments follow and of which kind (``ARG_KINDS``: a dim of the subject, a
broadcastable operand, a number from a list, an index tensor...), whether it has an in-place
form, what it returns, and which oracle settings a program using it needs. Loading validates
everything, so a typo in the table fails at once with the op's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

# Argument kinds the generator knows (args.py implements each); options are kind-specific.
ARG_KINDS = frozenset({
    "self", "clamped", "numel", "other", "like", "mask", "dim", "dims", "dimlist", "keepdim",
    "flag", "number", "int", "choice", "dtype", "shape", "expand", "strided", "span",
    "position", "slices", "count", "repeats", "tensors", "index", "index_like", "mat",
    "param", "normalized", "size", "kernel", "pad",
})
# Kinds that stand for the subject itself (exactly one per op).
SUBJECT_KINDS = frozenset({"self", "clamped", "numel", "tensors"})
_OP_KEYS = {"call", "method", "operator", "inplace", "dtypes", "rank", "nonempty", "args",
            "returns", "take", "tags", "settings", "weight"}
_RETURNS = {"tensor", "tuple", "list", "maybe_tuple"}
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
               "uint8", "bool")


class TableError(ValueError):
    """An operator table that cannot be used; the message names the op."""


@dataclass(frozen=True)
class ArgSpec:
    """One argument: its kind and options; ``name`` makes it a keyword argument, and an
    ``optional`` probability leaves it out that often."""

    kind: str
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def name(self) -> str | None:
        return self.options.get("name")

    @property
    def optional(self) -> float:
        value = self.options.get("optional", 0.0)
        return 0.5 if value is True else float(value)


@dataclass(frozen=True)
class OpSpec:
    """One operation of the table."""

    id: str
    call: str                          # torch.add | F.softmax | Tensor.view
    args: tuple[ArgSpec, ...]
    dtypes: frozenset[str]             # dtype names the subject may have
    method: str | None = None
    operator: str | None = None
    inplace: str | None = None
    rank: tuple[int, int] = (0, 4)
    nonempty: bool = False
    returns: str = "tensor"
    take: tuple[int, ...] = (0,)
    tags: tuple[str, ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()
    weight: float = 1.0

    @property
    def forms(self) -> tuple[str, ...]:
        """How the op may be spelled: ``function``, ``method``, ``operator``."""
        forms = [] if self.call.startswith("Tensor.") else ["function"]
        forms += ["method"] if self.method else []
        forms += ["operator"] if self.operator else []
        return tuple(forms)

    @property
    def subject_index(self) -> int:
        """Position of the subject among the arguments."""
        return next(i for i, a in enumerate(self.args) if a.kind in SUBJECT_KINDS)


@dataclass(frozen=True)
class OpTable:
    """Every op, plus the dtype classes the table's ``dtypes`` entries may name."""

    ops: tuple[OpSpec, ...]
    dtype_classes: dict[str, tuple[str, ...]] = field(hash=False, compare=False)

    def by_id(self) -> dict[str, OpSpec]:
        return {op.id: op for op in self.ops}


@cache
def default_table() -> OpTable:
    """The packaged table (loaded and validated once per process)."""
    text = resources.files("eqrewrite.oracle.generate").joinpath("ops.yaml").read_text("utf-8")
    return parse_table(yaml.safe_load(text))


def parse_table(data: Any) -> OpTable:
    """Validate a table's YAML data; TableError names the first bad op and why."""
    if not isinstance(data, dict) or not isinstance(data.get("ops"), dict):
        raise TableError("an op table is a mapping with 'dtype_classes' and 'ops'")
    classes = {name: tuple(members) for name, members in data.get("dtype_classes", {}).items()}
    for name, members in classes.items():
        unknown = sorted(set(members) - set(DTYPE_NAMES))
        if unknown:
            raise TableError(f"dtype class {name!r}: unknown dtypes {unknown}")
    ops = tuple(_parse_op(op_id, entry, classes) for op_id, entry in data["ops"].items())
    return OpTable(ops, classes)


def _parse_op(op_id: str, entry: Any, classes: dict[str, tuple[str, ...]]) -> OpSpec:
    def fail(message: str) -> TableError:
        return TableError(f"op {op_id!r}: {message}")

    if not isinstance(entry, dict):
        raise fail("must be a mapping")
    unknown = sorted(set(entry) - _OP_KEYS)
    if unknown:
        raise fail(f"unknown keys {unknown} (known: {sorted(_OP_KEYS)})")
    call = entry.get("call", "")
    if not isinstance(call, str) or not call.startswith(("torch.", "F.", "Tensor.")):
        raise fail("'call' must be torch.<name>, F.<name> or Tensor.<name>")
    args = tuple(_parse_arg(raw, fail) for raw in entry.get("args", []))
    if sum(a.kind in SUBJECT_KINDS for a in args) != 1:
        raise fail("needs exactly one subject argument (self, clamped, numel or tensors)")
    dtypes = _expand_dtypes(entry.get("dtypes", ["float"]), classes, fail)
    returns = entry.get("returns", "tensor")
    if returns not in _RETURNS:
        raise fail(f"'returns' must be one of {sorted(_RETURNS)}")
    rank = tuple(entry.get("rank", (0, 4)))
    if len(rank) != 2 or not 0 <= rank[0] <= rank[1]:
        raise fail("'rank' must be [lo, hi] with 0 <= lo <= hi")
    if call.startswith("Tensor.") and not (entry.get("method") or entry.get("operator")):
        raise fail("a Tensor.<name> call needs a method or operator spelling")
    return OpSpec(
        id=op_id, call=call, args=args, dtypes=dtypes, method=entry.get("method"),
        operator=entry.get("operator"), inplace=entry.get("inplace"), rank=rank,
        nonempty=bool(entry.get("nonempty", False)), returns=returns,
        take=tuple(entry.get("take", (0,))), tags=tuple(entry.get("tags", ())),
        settings=tuple(sorted(entry.get("settings", {}).items())),
        weight=float(entry.get("weight", 1.0)))


def _parse_arg(raw: Any, fail) -> ArgSpec:
    if isinstance(raw, str):
        kind, options = raw, {}
    elif isinstance(raw, dict) and len(raw) == 1:
        kind, options = next(iter(raw.items()))
        options = dict(options or {})
    else:
        raise fail(f"argument {raw!r} must be a kind or {{kind: {{options}}}}")
    if kind not in ARG_KINDS:
        raise fail(f"unknown argument kind {kind!r}")
    if kind == "keepdim":
        options.setdefault("name", "keepdim")
    strings = [v for v in options.get("values", ()) if isinstance(v, str)]
    if kind == "number" and strings:  # YAML reads 1.0e30 (no exponent sign) as a string
        raise fail(f"number values must be numbers, got {strings}")
    return ArgSpec(kind, options)


def _expand_dtypes(names: list[str], classes: dict[str, tuple[str, ...]], fail) -> frozenset:
    expanded: set[str] = set()
    for name in names:
        if name in classes:
            expanded |= set(classes[name])
        elif name in DTYPE_NAMES:
            expanded.add(name)
        else:
            raise fail(f"unknown dtype or dtype class {name!r}")
    return frozenset(expanded)
