"""Argument kinds of the op table: how each argument of a call is filled in.

``fill_call`` turns one ``OpSpec`` and a chosen subject into source text, argument by
argument: every kind (``dim``, ``other``, ``index``, ``param``...) is a small function
that reads the subject's real shape and dtype and the values the program already holds,
and returns the argument's text, or None when it cannot be satisfied (the op is then not
used here). Kinds prefer the program's own values over fresh constants, so data flows
between statements. Parameters a call needs are returned as pending ``__init__`` lines,
added only if the statement is kept.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .table import ArgSpec, OpSpec
from .values import Info, broadcast_to_left, broadcastable, literal

if TYPE_CHECKING:
    import torch


class Builder(Protocol):
    """What the arguments draw on: the values of the program being built (``builder.py``'s
    ``Builder``, which imports this module)."""

    rng: random.Random
    scalars: dict[str, object]

    def pick(self, accept: Callable[[Info], bool]) -> Info | None: ...

    def pick_many(self, accept: Callable[[Info], bool], count: int) -> list[Info]: ...

    def expand_dtypes(self, names: list[str]) -> set[str]: ...

    def new_parameter(self, shape: tuple[int, ...], dtype: torch.dtype) -> tuple[str, str]: ...


@dataclass
class Call:
    """A filled-in call: its text, the op it uses and the parameters it needs."""

    text: str
    op: OpSpec
    init: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)  # names of values the call reads


@dataclass
class _Context:
    """What the kinds of one call share: the subject, the chosen dim and pending params."""

    builder: Builder
    op: OpSpec
    subject: Info
    rng: random.Random
    dim: int | None = None
    init: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    params: list[tuple[int, ...]] = field(default_factory=list)

    def size(self, default: int = 0) -> int:
        """The subject's size along the chosen dim (or ``default``'s dim when none)."""
        shape = self.subject.shape
        if not shape:
            return 1
        dim = self.dim if self.dim is not None else default
        return shape[dim] if -len(shape) <= dim < len(shape) else 1

    def use(self, info: Info) -> str:
        self.operands.append(info.name)
        return info.name


ArgFiller = Callable[[_Context, ArgSpec], "str | None"]
_KINDS: dict[str, ArgFiller] = {}
_DIM_KINDS = ("dim",)


def arg_kind(name: str) -> Callable[[ArgFiller], ArgFiller]:
    def register(function: ArgFiller) -> ArgFiller:
        _KINDS[name] = function
        return function
    return register


def fill_call(builder: Builder, op: OpSpec, subject: Info, form: str) -> Call | None:
    """Source text calling ``op`` on ``subject`` in ``form``, or None if an argument cannot
    be filled."""
    ctx = _Context(builder, op, subject, builder.rng)
    texts: dict[int, str] = {}  # by argument position; "" for an optional one left out
    # dims first: other kinds (index, span, count...) depend on the dim chosen
    for order in (True, False):
        for i, spec in enumerate(op.args):
            if (spec.kind in _DIM_KINDS) != order:
                continue
            if spec.optional and ctx.rng.random() < spec.optional:
                texts[i] = ""
                continue
            text = _KINDS[spec.kind](ctx, spec)
            if text is None:
                return None
            texts[i] = text
    rendered = _render(op, [(spec, texts[i]) for i, spec in enumerate(op.args)], form, ctx)
    return None if rendered is None else Call(rendered, op, ctx.init, ctx.operands)


def _render(op: OpSpec, texts: list[tuple[ArgSpec, str]], form: str,
            ctx: _Context) -> str | None:
    subject_at = op.subject_index
    positional = [t for i, (a, t) in enumerate(texts) if t and not a.name and i != subject_at]
    keywords = [f"{a.name}={t}" for a, t in texts if t and a.name]
    subject = texts[subject_at][1]
    if form == "operator" and op.operator and not keywords and len(positional) <= 1:
        return _operator(op.operator, subject, positional)
    if form == "method" and op.method:
        receiver = subject if _atomic(subject) else f"({subject})"
        return f"{receiver}.{op.method}({', '.join(positional + keywords)})"
    if op.call.startswith("Tensor."):
        return None
    before = [t for i, (a, t) in enumerate(texts) if t and not a.name and i < subject_at]
    after = [t for i, (a, t) in enumerate(texts) if t and not a.name and i > subject_at]
    return f"{op.call}({', '.join(before + [subject] + after + keywords)})"


def _operator(operator: str, subject: str, positional: list[str]) -> str | None:
    if operator == "[]":
        return f"{_grouped(subject)}[{positional[0]}]" if positional else None
    if not positional:
        return f"{operator}{_grouped(subject)}" if operator in ("-", "~") else None
    return f"{_grouped(subject)} {operator} {_grouped(positional[0])}"


def _atomic(text: str) -> bool:
    return text.replace(".", "").replace("_", "").isalnum()


def _grouped(text: str) -> str:
    return text if _atomic(text) or (text.startswith("(") and text.endswith(")")
                                     and text.count("(") == 1) else f"({text})"


# ---- the subject ------------------------------------------------------------------------


@arg_kind("self")
def _self(ctx: _Context, spec: ArgSpec) -> str:
    return ctx.use(ctx.subject)


@arg_kind("clamped")
def _clamped(ctx: _Context, spec: ArgSpec) -> str:
    high = 1 if spec.options.get("unit") else 5
    return f"{ctx.use(ctx.subject)}.clamp(0, {high})"


@arg_kind("numel")
def _numel(ctx: _Context, spec: ArgSpec) -> str:
    return f"{ctx.use(ctx.subject)}.numel()"


@arg_kind("tensors")
def _tensors(ctx: _Context, spec: ArgSpec) -> str:
    subject, rng = ctx.subject, ctx.rng
    same = spec.options.get("same_shape")

    def fits(info: Info) -> bool:
        if info.rank != subject.rank or info.name == subject.name:
            return False
        if same:
            return info.shape == subject.shape
        dim = (ctx.dim or 0) % max(subject.rank, 1)
        return all(a == b for i, (a, b) in enumerate(zip(info.shape, subject.shape))
                   if i != dim)

    extra = [ctx.use(i) for i in ctx.builder.pick_many(fits, rng.randint(1, 2))]
    members = [ctx.use(subject)] + extra
    if len(members) == 1:
        members.append(subject.name)
    rng.shuffle(members)
    return "[" + ", ".join(members) + "]"


# ---- dims -------------------------------------------------------------------------------


@arg_kind("dim")
def _dim(ctx: _Context, spec: ArgSpec) -> str:
    count = max(ctx.subject.rank + spec.options.get("extra", 0), 1)
    dim = ctx.rng.randrange(-count, count)
    if ctx.dim is None:
        ctx.dim = dim
    return str(dim)


@arg_kind("dims")
def _dims(ctx: _Context, spec: ArgSpec) -> str:
    order = list(range(ctx.subject.rank))
    ctx.rng.shuffle(order)
    return literal(tuple(order))


@arg_kind("dimlist")
def _dimlist(ctx: _Context, spec: ArgSpec) -> str:
    rank = ctx.subject.rank
    return literal(sorted(ctx.rng.sample(range(rank), ctx.rng.randint(1, min(rank, 2)))))


@arg_kind("keepdim")
def _keepdim(ctx: _Context, spec: ArgSpec) -> str:
    return "True"


@arg_kind("flag")
def _flag(ctx: _Context, spec: ArgSpec) -> str:
    return literal(ctx.rng.random() < 0.6)


# ---- plain values -----------------------------------------------------------------------


@arg_kind("number")
def _number(ctx: _Context, spec: ArgSpec) -> str:
    return literal(ctx.rng.choice(spec.options["values"]))


@arg_kind("int")
def _int(ctx: _Context, spec: ArgSpec) -> str:
    low, high = spec.options.get("range", (0, 3))
    return str(ctx.rng.randint(low, high))


@arg_kind("choice")
def _choice(ctx: _Context, spec: ArgSpec) -> str:
    value = ctx.rng.choice(spec.options["values"])
    return str(value) if spec.options.get("code") else repr(value)


@arg_kind("dtype")
def _dtype(ctx: _Context, spec: ArgSpec) -> str:
    return f"torch.{ctx.rng.choice(spec.options['values'])}"


# ---- shapes and positions ---------------------------------------------------------------


@arg_kind("shape")
def _shape(ctx: _Context, spec: ArgSpec) -> str:
    rng, numel = ctx.rng, ctx.subject.numel
    factors = _factor(rng, numel, rng.randint(1, 3))
    if numel and rng.random() < 0.4:
        factors[rng.randrange(len(factors))] = -1
    return literal(tuple(factors))


def _factor(rng: random.Random, numel: int, parts: int) -> list[int]:
    if numel == 0:
        return [0] + [rng.randint(1, 3) for _ in range(parts - 1)]
    factors = []
    for _ in range(parts - 1):
        divisors = [d for d in range(1, numel + 1) if numel % d == 0]
        chosen = rng.choice(divisors)
        factors.append(chosen)
        numel //= chosen
    return factors + [numel]


@arg_kind("expand")
def _expand(ctx: _Context, spec: ArgSpec) -> str:
    rng = ctx.rng
    sizes = [rng.choice((1, 2, 3)) if s == 1 else (-1 if rng.random() < 0.3 else s)
             for s in ctx.subject.shape]
    lead = [rng.choice((2, 3)) for _ in range(rng.choice((0, 0, 1)))]
    return literal(tuple(lead + sizes))


@arg_kind("strided")
def _strided(ctx: _Context, spec: ArgSpec) -> str | None:
    rng, total = ctx.rng, ctx.subject.storage_numel
    for _ in range(6):
        rank = rng.randint(1, 3)
        sizes = [rng.randint(1, 4) for _ in range(rank)]
        strides = [rng.choice((0, 1, 1, 2, 3)) for _ in range(rank)]
        extent = sum((s - 1) * st for s, st in zip(sizes, strides)) + 1
        if extent <= total:
            offset = rng.randint(0, total - extent)
            return f"{literal(tuple(sizes))}, {literal(tuple(strides))}, {offset}"
    return None


@arg_kind("span")
def _span(ctx: _Context, spec: ArgSpec) -> str:
    size = ctx.size()
    start = ctx.rng.randint(0, size)
    return f"{start}, {ctx.rng.randint(0, size - start)}"


@arg_kind("position")
def _position(ctx: _Context, spec: ArgSpec) -> str | None:
    size = ctx.size()
    return str(ctx.rng.randrange(-size, size)) if size else None


@arg_kind("count")
def _count(ctx: _Context, spec: ArgSpec) -> str | None:
    size = ctx.size(default=-1)
    return str(ctx.rng.randint(1, size)) if size else None


@arg_kind("slices")
def _slices(ctx: _Context, spec: ArgSpec) -> str:
    rng, shape = ctx.rng, ctx.subject.shape
    pieces = []
    for size in shape[: rng.randint(1, len(shape))]:
        options = [":", "::2", f"{rng.randint(0, max(size - 1, 0))}:", f":{-1 if size else 0}",
                   f"{rng.randint(0, size)}:{size}:{rng.randint(1, 3)}", "None"]
        options += [str(rng.randrange(-size, size))] if size else []
        pieces.append(rng.choice(options))
    if rng.random() < 0.2:
        pieces = ["...", *pieces[1:]] if len(pieces) > 1 else ["...", "0" if shape[-1] else ":"]
    return ", ".join(pieces)


@arg_kind("repeats")
def _repeats(ctx: _Context, spec: ArgSpec) -> str:
    count = max(ctx.subject.rank, 1) + ctx.rng.choice((0, 0, 1))
    return literal(tuple(ctx.rng.randint(1, 2) for _ in range(count)))


@arg_kind("normalized")
def _normalized(ctx: _Context, spec: ArgSpec) -> str | None:
    return literal(ctx.subject.shape[-1:]) if ctx.subject.rank else None


@arg_kind("size")
def _size(ctx: _Context, spec: ArgSpec) -> str:
    count = ctx.subject.rank - 2 if spec.options.get("spatial") else 2
    return literal(tuple(ctx.rng.randint(1, 6) for _ in range(max(count, 1))))


@arg_kind("kernel")
def _kernel(ctx: _Context, spec: ArgSpec) -> str | None:
    smallest = min(ctx.subject.shape[-2:])
    return str(ctx.rng.randint(1, min(smallest, 3))) if smallest else None


@arg_kind("pad")
def _pad(ctx: _Context, spec: ArgSpec) -> str:
    high = 1 if spec.options.get("small") else 2
    count = ctx.rng.randint(1, min(max(ctx.subject.rank, 1), 3))
    return literal([ctx.rng.randint(0, high) for _ in range(2 * count)])


# ---- other tensors ----------------------------------------------------------------------


def _dtype_filter(ctx: _Context, spec: ArgSpec) -> Callable[[Info], bool]:
    if spec.options.get("same_dtype"):
        return lambda info: info.dtype == ctx.subject.dtype
    allowed = spec.options.get("dtypes")
    if allowed:
        names = ctx.builder.expand_dtypes(allowed)
        return lambda info: info.dtype_name in names
    return lambda info: info.dtype_name in ctx.op.dtypes


@arg_kind("other")
def _other(ctx: _Context, spec: ArgSpec) -> str | None:
    rng, subject = ctx.rng, ctx.subject
    scalars = spec.options.get("scalars")
    if scalars and ctx.builder.scalars and rng.random() < 0.1:
        return rng.choice(sorted(ctx.builder.scalars))  # a Python number the program computed
    if scalars and rng.random() < 0.35:
        return literal(rng.choice(scalars))
    dtype_ok = _dtype_filter(ctx, spec)
    exact = rng.random() < 0.7  # mostly the subject's shape, so in-place forms apply

    def fits(info: Info) -> bool:
        shaped = broadcast_to_left(subject.shape, info.shape) if exact else broadcastable(
            subject.shape, info.shape)
        return shaped and dtype_ok(info) and info.name != subject.name

    chosen = ctx.builder.pick(fits)
    if chosen is not None:
        return ctx.use(chosen)
    if scalars and spec.options.get("scalar_only", True) is not False:
        return literal(rng.choice(scalars))
    return ctx.use(subject) if dtype_ok(subject) else None


@arg_kind("like")
def _like(ctx: _Context, spec: ArgSpec) -> str | None:
    subject = ctx.subject
    dtype_ok = _dtype_filter(ctx, spec) if spec.options.get("same_dtype") else (
        lambda info: True)
    any_shape = spec.options.get("any_shape")
    chosen = ctx.builder.pick(lambda i: (any_shape or i.shape == subject.shape)
                              and dtype_ok(i) and i.name != subject.name)
    if chosen is not None:
        return ctx.use(chosen)
    return f"torch.roll({ctx.use(subject)}, 1)"


@arg_kind("mask")
def _mask(ctx: _Context, spec: ArgSpec) -> str:
    subject = ctx.subject
    chosen = ctx.builder.pick(lambda i: i.dtype_name == "bool"
                              and broadcast_to_left(subject.shape, i.shape))
    if chosen is not None:
        return ctx.use(chosen)
    source = ctx.builder.pick(lambda i: i.shape == subject.shape and i.dtype_name != "bool")
    if source is not None:
        return f"({ctx.use(source)} > {literal(ctx.rng.choice((0, 0.5, -0.5)))})"
    if subject.dtype_name == "bool":
        return f"~{ctx.use(subject)}"
    return f"({ctx.use(subject)} > 0)"


@arg_kind("index")
def _index(ctx: _Context, spec: ArgSpec) -> str:
    rng = ctx.rng
    size = ctx.subject.numel if spec.options.get("flat") else ctx.size()
    if size == 0:
        values: list[int] = []
    elif spec.options.get("duplicates") and rng.random() < 0.6:
        values = [rng.randrange(size) for _ in range(rng.randint(1, 2 * size))]
    else:
        values = rng.sample(range(size), rng.randint(1, size))
    index = f"torch.tensor({values}, dtype=torch.long)"
    if not spec.options.get("source"):
        return index
    shape = list(ctx.subject.shape) or [1]
    dim = (ctx.dim or 0) % len(shape)
    shape[dim] = len(values)
    dtype = ctx.subject.dtype
    source = (f"torch.arange({math.prod(shape)}, dtype={dtype})"
              f".reshape({literal(tuple(shape))})")
    return f"{index}, {source}"


@arg_kind("index_like")
def _index_like(ctx: _Context, spec: ArgSpec) -> str | None:
    size, shape = ctx.size(), ctx.subject.shape
    if size == 0:
        return None
    seed = ctx.rng.randrange(10_000)
    generator = f"generator=torch.Generator().manual_seed({seed})"
    if spec.options.get("unique"):
        dim = ctx.dim if ctx.dim is not None else 0
        return f"torch.rand({literal(shape)}, {generator}).argsort(dim={dim})"
    return f"torch.randint(0, {size}, {literal(shape)}, {generator})"


@arg_kind("mat")
def _mat(ctx: _Context, spec: ArgSpec) -> str:
    subject = ctx.subject
    if spec.options.get("rule") == "vector":
        chosen = ctx.builder.pick(lambda i: i.rank == 1 and i.dtype == subject.dtype)
        return ctx.use(chosen) if chosen else _new_param(ctx, (ctx.rng.randint(1, 5),))
    inner = subject.shape[-1]
    columns = ctx.rng.randint(1, 5)
    wanted = {1: ((inner,), (inner, columns)), 2: ((inner, columns),),
              3: ((subject.shape[0], inner, columns),)}[subject.rank]

    def fits(info: Info) -> bool:
        return info.dtype == subject.dtype and info.rank == len(wanted[0]) and (
            info.shape[:-1] == wanted[0][:-1] if info.rank > 1 else info.shape == wanted[0])

    chosen = ctx.builder.pick(fits)
    return ctx.use(chosen) if chosen else _new_param(ctx, ctx.rng.choice(wanted))


@arg_kind("param")
def _param(ctx: _Context, spec: ArgSpec) -> str:
    shape: list[int] = []
    for entry in spec.options["shape"]:
        if isinstance(entry, list):
            shape.append(ctx.rng.randint(*entry))
        elif isinstance(entry, str) and entry.startswith("x."):
            shape.append(ctx.subject.shape[int(entry[2:])] if ctx.subject.rank else 1)
        else:
            shape.append(int(entry))
    if "tied" in spec.options and ctx.params:
        shape = [ctx.params[-1][spec.options["tied"]]]
    return _new_param(ctx, tuple(shape))


def _new_param(ctx: _Context, shape: tuple[int, ...]) -> str:
    ctx.params.append(shape)
    name, line = ctx.builder.new_parameter(shape, ctx.subject.dtype)
    ctx.init.append(line)
    return name


def render_kind(builder: Builder, kind_name: str, subject: Info, op: OpSpec,
                **options: Any) -> str | None:
    """One argument of kind ``kind_name`` for ``subject`` (statements that are not table
    calls, such as slice assignments, use the kinds too)."""
    ctx = _Context(builder, op, subject, builder.rng)
    return _KINDS[kind_name](ctx, ArgSpec(kind_name, options))
