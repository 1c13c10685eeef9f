"""Building one program by running it: the statement-by-statement core of the generator.

The builder holds the program so far (module-level lines, ``__init__`` lines, forward
statements, inputs) and a live namespace in which all of it has been executed. A candidate
statement is executed in that namespace at once: if it raises, or produces a value the
generator does not keep (complex, sparse, too large), it is dropped and the namespace is
rebuilt from the statements kept so far. The values a kept statement binds are described from
the real tensors (``values.describe``), so later statements choose operands whose shapes,
dtypes and aliasing are known, not guessed. Everything random comes from one
``random.Random``, so a seed determines the program.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from types import CodeType

import torch
import torch.nn.functional as F
from torch import nn

from .args import Call, fill_call
from .inputs import InputSpec, render_get_inputs
from .table import OpSpec, OpTable
from .values import Info, acceptable, describe

_PARAMETER = re.compile(r"self\.(p\d+) = nn\.Parameter|self\.register_buffer\('(p\d+)'")
GENERATION_SEED = 0  # torch's global seed while building, as the oracle seeds its runs


@dataclass
class Stmt:
    """One kept forward statement (simple or compound), with what it used."""

    lines: list[str]
    binds: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    code: CodeType | None = None


@dataclass
class Draft:
    """Everything a program is rendered from."""

    inputs: list[InputSpec]
    input_seed: int
    module_lines: list[str] = field(default_factory=list)
    init_lines: list[str] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)
    outputs: str = ""
    global_names: set[str] = field(default_factory=set)
    settings: dict[str, object] = field(default_factory=dict)
    uses_self: bool = False

    @property
    def ops(self) -> Counter:
        return Counter(op for stmt in self.body for op in stmt.ops)

    @property
    def features(self) -> set[str]:
        return {f for stmt in self.body for f in stmt.features}


class Builder:
    """A program under construction and the namespace where it has run."""

    def __init__(self, rng: random.Random, table: OpTable, inputs: list[InputSpec],
                 input_seed: int, op_ids: frozenset[str] | None = None,
                 focus: str | None = None, boost: float = 8.0):
        self.rng, self.table = rng, table
        self.focus, self._boost = focus, boost
        self.draft = Draft(inputs, input_seed)
        self.ops = [op for op in table.ops if op_ids is None or op.id in op_ids]
        self.pool: dict[str, Info] = {}
        self.scalars: dict[str, object] = {}
        self.consumed: set[str] = set()
        self.step = 0
        self.tried = self.kept = 0
        self._names: Counter = Counter()
        self._dirty = True
        self.ns: dict[str, object] = {}

    # ---- names, pool, choice ----------------------------------------------------------------

    def fresh(self, prefix: str = "v") -> str:
        """A new variable name: v0, v1, ... (p0... for parameters, s0... for scalars)."""
        name = f"{prefix}{self._names[prefix]}"
        self._names[prefix] += 1
        return name

    def pick(self, accept) -> Info | None:
        """A value satisfying ``accept``, recent ones more likely (chains form)."""
        chosen = self.pick_many(accept, 1)
        return chosen[0] if chosen else None

    def pick_many(self, accept, count: int) -> list[Info]:
        """Up to ``count`` distinct values satisfying ``accept``, recency-weighted."""
        candidates = sorted((i for i in self.pool.values() if accept(i)),
                            key=lambda i: (i.born, i.name))
        chosen = []
        for _ in range(min(count, len(candidates))):
            weights = [1 + (rank + 1) ** 1.5 for rank in range(len(candidates))]
            pick = self.rng.choices(range(len(candidates)), weights)[0]
            chosen.append(candidates.pop(pick))
        return chosen

    def expand_dtypes(self, names: list[str]) -> set[str]:
        """dtype names for a list of classes and dtype names."""
        return {d for n in names for d in self.table.dtype_classes.get(n, (n,))}

    def new_parameter(self, shape: tuple[int, ...], dtype: torch.dtype) -> tuple[str, str]:
        """A parameter (floating) or buffer (other dtypes) of ``shape``: its name and the
        ``__init__`` line creating it."""
        name = self.fresh("p")
        size = f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        if dtype.is_floating_point:
            return f"self.{name}", (f"self.{name} = nn.Parameter(torch.randn({size}, "
                                    f"dtype={dtype}))")
        maker = (f"torch.rand({size}) > 0.5" if dtype == torch.bool
                 else f"torch.randint(-3, 4, {size}).to({dtype})")
        return f"self.{name}", f"self.register_buffer({name!r}, {maker})"

    # ---- the live namespace -----------------------------------------------------------------

    def _rebuild(self) -> None:
        """Run the kept program from scratch: module lines, ``__init__``, inputs, body."""
        draft = self.draft
        ns: dict[str, object] = {"torch": torch, "nn": nn, "F": F, "math": math,
                                 "partial": functools.partial, "__name__": "eqrewrite_gen"}
        with _quiet():
            exec("\n".join(draft.module_lines), ns)  # noqa: S102 - generated code, by design
            torch.manual_seed(GENERATION_SEED)
            ns["self"] = module = nn.Module()
            exec("\n".join(draft.init_lines), ns)  # noqa: S102
            module.eval()
            exec("\n".join(render_get_inputs(draft.inputs, draft.input_seed)), ns)  # noqa: S102
            for spec, value in zip(draft.inputs, ns["get_inputs"]()):
                ns[spec.name] = value
            torch.manual_seed(GENERATION_SEED)
            for stmt in draft.body:
                exec(stmt.code, ns)  # noqa: S102
        self.ns, self._dirty = ns, False

    def namespace(self) -> dict[str, object]:
        """The namespace after every kept statement (rebuilt if a rejected one ran)."""
        if self._dirty:
            self._rebuild()
        return self.ns

    def evaluate(self, text: str, init: list[str] = ()) -> object:
        """Evaluate an expression (after running pending ``__init__`` lines); raises what
        the expression raises. Marks the namespace dirty when it changed it."""
        ns = self.namespace()
        if init:
            self._dirty = True
            with _quiet():
                exec("\n".join(init), ns)  # noqa: S102
        with _quiet():
            return eval(text, ns)  # noqa: S307 - generated code, by design

    def discard(self) -> None:
        """Forget whatever a rejected candidate did to the namespace (and count it)."""
        self.tried += 1
        self._dirty = True

    # ---- statements -------------------------------------------------------------------------

    def attempt(self, lines: list[str], binds: tuple[str, ...] = (), ops: tuple[str, ...] = (),
                features: tuple[str, ...] = (), init: list[str] = (),
                module_lines: list[str] = (), settings: dict | None = None,
                global_names: tuple[str, ...] = (), reads: tuple[str, ...] = ()) -> bool:
        """Run a candidate statement; keep it (and its ``__init__`` and module-level lines)
        when it runs and every name it binds holds an acceptable value."""
        self.tried += 1
        try:
            code = compile("\n".join(lines), "<generated>", "exec")
            ns = self.namespace()
            self._dirty = True  # until proven otherwise
            with _quiet():
                exec("\n".join(module_lines), ns)  # noqa: S102
                exec("\n".join(init), ns)  # noqa: S102
                exec(code, ns)  # noqa: S102
        except Exception:  # noqa: BLE001 - any failure only means "not this statement"
            return False
        if not all(_keepable(ns.get(name)) for name in binds):
            return False
        self._dirty = False
        self._commit(Stmt(list(lines), binds, ops, features, code), init, module_lines,
                     settings or {}, global_names, reads)
        return True

    def _commit(self, stmt: Stmt, init, module_lines, settings, global_names, reads) -> None:
        draft = self.draft
        draft.body.append(stmt)
        draft.init_lines += list(init)
        draft.module_lines += list(module_lines)
        draft.settings.update(settings)
        draft.global_names |= set(global_names)
        self.kept += 1
        self.step += 1
        self.consumed |= set(reads)
        for name in stmt.binds:
            self.register(name)
        for line in init:
            found = _PARAMETER.match(line)
            if found:
                self.register(f"self.{found[1] or found[2]}", "param")

    def register_input(self, name: str) -> None:
        """Add an input of the target to the pool."""
        self.namespace()
        self.register(name, "input")

    def register(self, name: str, origin: str = "local") -> None:
        """Describe what ``name`` now holds: a tensor joins the pool, a number the scalars."""
        value = self.ns.get(name) if "." not in name else self.evaluate(name)
        if isinstance(value, torch.Tensor):
            self.pool[name] = describe(name, value, self.step, origin)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.scalars[name] = value

    # ---- op statements ----------------------------------------------------------------------

    def choose_op(self, accept=lambda op: True) -> OpSpec | None:
        ops = [op for op in self.ops if accept(op)]
        weights = [op.weight * (self._boost if self.focus in op.tags else 1.0) for op in ops]
        return self.rng.choices(ops, weights)[0] if ops else None

    def _has_subject(self, op: OpSpec) -> bool:
        low, high = op.rank
        return any(i.dtype_name in op.dtypes and low <= i.rank <= high
                   and (i.numel > 0 or not op.nonempty) for i in self.pool.values())

    def subject_for(self, op: OpSpec) -> Info | None:
        """A value the op accepts as its subject."""
        low, high = op.rank
        return self.pick(lambda i: i.dtype_name in op.dtypes and low <= i.rank <= high
                         and (i.numel > 0 or not op.nonempty))

    def call(self, op: OpSpec, subject: Info) -> Call | None:
        """``op`` on ``subject`` in one of its spellings, arguments filled."""
        return fill_call(self, op, subject, self.rng.choice(op.forms))

    def op_statement(self, accept=lambda op: True) -> bool:
        """One assignment from the op table: ``vN = <call>`` (or unpacked results). Only ops
        some value can be the subject of are drawn, so ops with narrow subjects (rank-4
        pooling, integer matmul) are used whenever the program has a value they accept."""
        op = self.choose_op(lambda spec: accept(spec) and self._has_subject(spec))
        subject = op and self.subject_for(op)
        call = subject and self.call(op, subject)
        if not call:
            return False
        try:
            result = self.evaluate(call.text, call.init)
        except Exception:  # noqa: BLE001
            self.discard()
            return False
        lines, binds = self._binding(call, result)
        if not lines:
            return False
        return self.attempt(lines, binds, (op.id,), op.tags, call.init,
                            settings=dict(op.settings), reads=tuple(call.operands))

    def _binding(self, call: Call, result: object) -> tuple[list[str], tuple[str, ...]]:
        """How to bind a call's result: one name, an item of a tuple, or unpacked parts."""
        if isinstance(result, torch.Tensor):
            name = self.fresh()
            return [f"{name} = {call.text}"], (name,)
        if not isinstance(result, tuple | list) or not result:
            return [], ()
        if not all(isinstance(item, torch.Tensor) for item in result):
            return [], ()
        if 2 <= len(result) <= 4 and self.rng.random() < 0.5:
            names = tuple(self.fresh() for _ in result)
            return [f"{', '.join(names)} = {call.text}"], names
        usable = [k for k in call.op.take if k < len(result)] or [0]
        name = self.fresh()
        return [f"{name} = {call.text}[{self.rng.choice(usable)}]"], (name,)

    def same_expression(self, subject: Info, tries: int = 10) -> tuple[str, str] | None:
        """An out-of-place expression over ``subject`` with its exact shape and dtype (for
        branches and loop bodies): ``(text, op id)``."""
        def accept(op: OpSpec) -> bool:
            return (op.returns == "tensor" and "view" not in op.tags and "rng" not in op.tags
                    and subject.dtype_name in op.dtypes
                    and op.rank[0] <= subject.rank <= op.rank[1]
                    and not any(a.kind in ("param", "mat") for a in op.args))

        for _ in range(tries):
            op = self.choose_op(accept)
            call = op and self.call(op, subject)
            if not call:
                continue
            try:
                value = self.evaluate(call.text)
            except Exception:  # noqa: BLE001
                self.discard()
                continue
            if (isinstance(value, torch.Tensor) and tuple(value.shape) == subject.shape
                    and value.dtype == subject.dtype):
                return call.text, op.id
        return None


def _keepable(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return acceptable(value)
    return value is not None


@contextlib.contextmanager
def _quiet():
    """Generated code may warn (deprecations, UserWarnings); the builder does not care."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
