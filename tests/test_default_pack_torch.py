"""Run every rule of the default pack for real: original and rewritten code must agree.

Each rule rewrites small snippets (alone, so the test shows which rule is at fault), both
versions are executed with torch on a battery of inputs, and the outcomes are compared
strictly: same type, dtype, shape and strides, values equal bit for bit (NaN payloads and
the sign of zero included), the same exception type when the original raises, the same
post-call state of every input (so in-place updates and aliasing are checked), the same
object identities, and for differentiable rules the same gradients.

The rules fire only where their guards prove the operands' kinds, so every snippet declares
them: the right operand is annotated to match the input it receives (``y: torch.Tensor``, ``y:
float``..., scalar annotations trusted). Where a rule must not fire (an operand that is neither
a tensor nor a number, a left operand whose evaluation order matters), the check is that the
source comes out unchanged, and a forced rewrite shows what the guard prevents. Where an unsafe
rule is known to differ, the difference is asserted exactly as its description documents it, so
the ``unsafe`` label stays justified by a test.

Cases are generated per rule from its family, read off the pack by ``family_of`` (no
hand-kept list); ``test_every_rule_is_exercised`` fails as soon as the pack holds a rule that
no case runs.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest
import torch
from eqrewrite.oracle.judging.compare import CompareOptions, compare
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

try:
    import numpy as np
except ImportError:  # numpy is optional: its cases are left out, nothing is skipped
    np = None

PACK = load_pack("default")
RULES = {rule.id: rule for rule in select_rules(PACK.rules, RewriteOptions(unsafe=True))}
# Snippets declare their operands' kinds with annotations (`y: float`), which count as proof
# only when trusted: these tests are about what rules do with proven operands.
DECLARED = RewriteOptions(trust_scalar_annotations=True)

INF, NAN = math.inf, math.nan
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I8, U8, I32, I64, C64 = torch.int8, torch.uint8, torch.int32, torch.int64, torch.complex64
BOOL = torch.bool
FLOAT_TAGS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}
INT_TAGS = {"i8": I8, "u8": U8, "i32": I32, "i64": I64}

def family_of(rule) -> tuple[str, str] | None:
    """Which snippets ``rule`` is tested with, (family, operator), read off its pattern and
    guards; None for a shape no family covers (``test_every_rule_is_exercised`` names it)."""
    text = " ".join(rule.pattern.text.split())
    if text == "not $a":
        return ("condition" if rule.context == "condition" else "not_anywhere", "not")
    binary = re.fullmatch(r"\$(\w+) (\S+) \$(\w+)", text)
    if binary is None:
        unary = text.replace("$a", "x")
        return ("unary", unary) if unary in UNARY_VARIANTS else None
    left, op = binary.group(1), binary.group(2)
    guards = {(c.guard, name) for c in rule.where for name in c.metavariables}
    if op.endswith("=") and ("name", left) in guards:
        return "inplace", op
    if op == "@":
        return "matmul", op
    return ("scalar_left" if ("scalar", left) in guards else "binary"), op


# -- rewriting and running -------------------------------------------------------------------


@functools.cache
def rewritten(rule_id: str, source: str) -> str:
    """``source`` rewritten by the single rule ``rule_id``, which must fire."""
    result = rewrite_source(source, [RULES[rule_id]], DECLARED)
    assert result.text != source, f"{rule_id} did not change:\n{source}"
    fired = {edit.rule.id for _, edit in result.edits}
    assert fired == {rule_id}, f"expected only {rule_id} to fire, got {fired}"
    return result.text


def assert_unchanged(rule_id: str, source: str) -> None:
    """The single rule ``rule_id`` leaves ``source`` alone."""
    result = rewrite_source(source, [RULES[rule_id]], DECLARED)
    assert not result.edits and result.text == source, (
        f"{rule_id} must not fire, but rewrote\n{source}\ninto\n{result.text}")


def swaps_operands(rule_id: str) -> bool:
    """The rewrite evaluates ``$b`` before ``$a`` (``2 + x`` to ``torch.add(x, 2)``)."""
    rewrite = RULES[rule_id].rewrite
    return "$a" in rewrite and "$b" in rewrite and rewrite.index("$b") < rewrite.index("$a")


def annotation(value: object) -> str:
    """The parameter annotation that proves ``value``'s kind to the guards."""
    if isinstance(value, torch.Tensor):
        return "torch.Tensor"
    for number_type in (bool, int, float, complex):  # bool first: it is an int
        if isinstance(value, number_type):  # a numpy float64 is a float
            return number_type.__name__
    raise AssertionError(f"{value!r} is neither a tensor nor a Python number")


@functools.cache
def _compiled(source: str):
    return compile(source, "<snippet>", "exec")


def load(source: str, name: str = "f") -> Callable:
    """Execute ``source`` in a fresh namespace and return its function ``name``."""
    namespace: dict[str, object] = {"__name__": "eqrewrite_snippet"}
    exec(_compiled(source), namespace)
    return namespace[name]


@dataclass
class Observed:
    """What one call did: its value or exception, and the inputs' state afterwards."""

    value: object = None
    error: Exception | None = None
    identity: tuple = ()
    inputs: tuple = ()


def _watched(args: tuple) -> tuple:
    """The arguments plus the base of every argument that is a view, to see writes through."""
    bases = tuple(a._base for a in args if isinstance(a, torch.Tensor) and a._base is not None)
    return args + bases


def _identity(value: object, args: tuple) -> tuple:
    """For the value (or each element of a returned tuple): which argument it *is*, if any."""
    items = value if isinstance(value, tuple) else (value,)
    return tuple(next((i for i, a in enumerate(args) if item is a), None) for item in items)


def observe(function: Callable, args: tuple) -> Observed:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = function(*args)
        except Exception as error:
            return Observed(error=error, inputs=_watched(args))
    return Observed(value=value, identity=_identity(value, args), inputs=_watched(args))


def observe_grad(function: Callable, args: tuple) -> Observed:
    """The output and the gradients of every input that requires grad."""
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = function(*args)
            grads = torch.autograd.grad(out, leaves, torch.ones_like(out), allow_unused=True)
        except Exception as error:
            return Observed(error=error)
    return Observed(value=(out.detach(), tuple(grads)))


# -- strict comparison -----------------------------------------------------------------------

# The oracle's comparison at the rewrite standard: bits (NaN payloads and signs of zero
# included), dtype, shape, strides, requires_grad, exact types, Python values exactly.
EXACT = CompareOptions(bitwise=True)


def assert_same(before: object, after: object, where: str = "result") -> None:
    """``after`` is indistinguishable from ``before``, by the oracle's ``compare``."""
    differences = compare(before, after, EXACT, path=where)
    assert not differences, "\n".join(d.message for d in differences) + (
        f"\n  original:  {before!r}\n  rewritten: {after!r}")


def assert_same_outcome(before: Observed, after: Observed) -> None:
    if before.error is not None:
        assert after.error is not None, (
            f"original raised {type(before.error).__name__}: {before.error}\n"
            f"rewritten returned {after.value!r}")
        assert type(after.error) is type(before.error), (
            f"original raised {type(before.error).__name__}: {before.error}\n"
            f"rewritten raised {type(after.error).__name__}: {after.error}")
    else:
        assert after.error is None, (
            f"original returned {before.value!r}\n"
            f"rewritten raised {type(after.error).__name__}: {after.error}")
        assert_same(before.value, after.value)
        assert before.identity == after.identity, (
            f"identity of the returned objects: {before.identity} vs {after.identity}")
    assert_same(before.inputs, after.inputs, "inputs after the call")


# -- input builders (each call builds fresh objects) -----------------------------------------


def floats(dtype: torch.dtype) -> torch.Tensor:
    """Ordinary and special values: signed zeros, infinities, NaN, subnormal, tiny, huge."""
    info = torch.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 7.0, 1e-3, INF, -INF, NAN,
              info.tiny, info.tiny / 4, info.max, -info.max]
    return torch.tensor(values, dtype=dtype)


def ints(dtype: torch.dtype, zero: bool = True) -> torch.Tensor:
    """Small values of both signs and the extremes of ``dtype``."""
    info = torch.iinfo(dtype)
    values = [-7, -3, -2, -1, 0, 1, 2, 3, 7, info.min, info.max]
    values = sorted({v for v in values if info.min <= v <= info.max and (zero or v != 0)})
    return torch.tensor(values, dtype=dtype)


def complexes() -> torch.Tensor:
    parts = torch.tensor([0.0, -0.0, 1.5, -2.0, INF, NAN])
    return torch.complex(parts[:, None], parts[None, :]).reshape(-1).to(C64)


def bools() -> torch.Tensor:
    return torch.tensor([False, True])


def grid(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every value of ``a`` against every value of ``b``: shapes (n, 1) and (1, m) broadcast."""
    return a[:, None], b[None, :]


def float_grid(dtype: torch.dtype) -> tuple:
    return grid(floats(dtype), floats(dtype))


def int_grid(dtype: torch.dtype, zero: bool = False) -> tuple:
    return grid(ints(dtype), ints(dtype, zero=zero))


def mixed(x: Callable[[], torch.Tensor], y: Callable[[], object]) -> tuple:
    return x(), y()


class Sub(torch.Tensor):
    """A plain tensor subclass: results must keep the subclass either way."""


def subclass(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.as_subclass(Sub)


def parameter(tensor: torch.Tensor) -> torch.Tensor:
    return torch.nn.Parameter(tensor, requires_grad=False)


def _reflected(name: str, owner: str = "Reflecting") -> Callable:
    def method(self, *other):
        return f"{owner}.{name}"
    return method


class Reflecting:
    """An operand that implements the reflected operators (as numpy arrays, sympy do)."""

    __radd__ = _reflected("__radd__")
    __rsub__ = _reflected("__rsub__")
    __rmul__ = _reflected("__rmul__")
    __rtruediv__ = _reflected("__rtruediv__")
    __rfloordiv__ = _reflected("__rfloordiv__")
    __rmod__ = _reflected("__rmod__")
    __rpow__ = _reflected("__rpow__")
    __rmatmul__ = _reflected("__rmatmul__")

    def __eq__(self, other):
        return type(other) is Reflecting

    __hash__ = object.__hash__


class Overriding(torch.Tensor):
    """A tensor subclass with operators of its own; its torch functions are torch's.

    Python calls the subclass's operator (its reflected one too, even with a plain tensor on
    the left), while the rewritten torch function goes through ``__torch_function__``.
    """

    def __bool__(self):
        return True


for _name in ("add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv "
              "rfloordiv mod rmod pow rpow ipow matmul rmatmul neg invert").split():
    setattr(Overriding, f"__{_name}__", _reflected(f"__{_name}__", "Overriding"))


def overriding(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.as_subclass(Overriding)


def const(value: object) -> Callable[[], object]:
    return lambda: value


def ndarray() -> object:
    return np.array([1.0, -0.0, 2.5])


F32_3 = partial(torch.tensor, [1.5, -0.0, 3.0])

# x on the left, y on the right of a binary operator.
BINARY_INPUTS: dict[str, Callable[[], tuple]] = {}
for _tag, _dtype in FLOAT_TAGS.items():
    BINARY_INPUTS[f"{_tag}-grid"] = partial(float_grid, _dtype)
for _tag in ("i8", "i64"):
    BINARY_INPUTS[f"{_tag}-grid"] = partial(int_grid, INT_TAGS[_tag])
BINARY_INPUTS.update({
    "i64-grid-zero-divisor": partial(int_grid, I64, zero=True),
    "i64-by-small-exponents": lambda: grid(ints(I64), torch.tensor([0, 1, 2, 3, 5, 63])),
    "bool-grid": lambda: grid(bools(), bools()),
    "c64-grid": lambda: grid(complexes(), complexes()),
    # dtype promotion between tensors
    "u8-by-i8": lambda: grid(ints(U8, zero=False), ints(I8, zero=False)),
    "i64-by-f32": lambda: grid(ints(I64), floats(F32)),
    "bool-by-i64": lambda: grid(bools(), ints(I64, zero=False)),
    "f32-by-c64": lambda: grid(floats(F32), complexes()),
    # 0-d tensors: they do not promote a dimensioned operand of the same category
    "f32-by-f64-0d": lambda: (floats(F32), torch.tensor(-2.5, dtype=F64)),
    "i64-by-f32-0d": lambda: (ints(I64), torch.tensor(-0.0)),
    "i64-0d-by-i64-0d-zero": lambda: (torch.tensor(7), torch.tensor(0)),
    # shapes and layouts
    "broadcast-3d": lambda: (torch.arange(-3.0, 3.0).reshape(2, 1, 3),
                             torch.arange(1.0, 13.0).reshape(4, 3) - 6),
    "empty": lambda: (torch.empty(0, 3), torch.tensor([1.0, -2.0, 0.0])),
    "non-contiguous": lambda: (floats(F32).reshape(1, -1).repeat(3, 1).t(),
                               torch.arange(1.0, 52.0).reshape(3, 17).t() - 25),
    "shape-mismatch": lambda: (torch.ones(3), torch.ones(4)),
    # subclasses
    "subclass-by-f32": lambda: (subclass(floats(F32)), floats(F32).flip(0)),
})
# Python scalars on the right
for _name, _x, _y in [
    ("f32-by-int(-3)", partial(floats, F32), -3),
    ("f32-by-float(2.5)", partial(floats, F32), 2.5),
    ("f32-by-float(-0.0)", partial(floats, F32), -0.0),
    ("f32-by-float(nan)", partial(floats, F32), NAN),
    ("f32-by-float(1e300)", partial(floats, F32), 1e300),
    ("f32-by-bool(True)", partial(floats, F32), True),
    ("f32-by-complex(1j)", partial(floats, F32), 1j),
    ("f16-by-float(1e5)", partial(floats, F16), 1e5),
    ("i64-by-int(-3)", partial(ints, I64), -3),
    ("i64-by-int(2**70)", partial(ints, I64), 2**70),
    ("i64-by-float(2.5)", partial(ints, I64), 2.5),
    ("u8-by-int(-1)", partial(ints, U8), -1),
    ("bool-by-bool(True)", bools, True),
    ("i64-0d-by-int(-2)", partial(torch.tensor, -7), -2),
]:
    BINARY_INPUTS[_name] = partial(mixed, _x, const(_y))
BINARY_INPUTS["f32-by-subclass"] = lambda: (floats(F32), subclass(floats(F32).flip(0)))
if np is not None:  # a float subclass: what a ``float``-annotated parameter may receive
    BINARY_INPUTS["f32-by-numpy-float64"] = lambda: (F32_3(), np.float64(-2.5))
# The annotation each right operand gets, so that the guards prove it.
BINARY_RIGHT = {name: annotation(make()[1]) for name, make in BINARY_INPUTS.items()}

# Right operands that are neither tensors nor numbers: the rules must not fire, since Python
# would give the operand's reflected method a turn (or repeat a list) where a torch function
# raises. Each maps to the operators for which a forced rewrite would change the outcome.
ALL_OPERATORS = frozenset("+ - * / ** // % @ += -= *= /= **=".split())
NON_NUMERIC_RIGHT: dict[str, tuple[Callable[[], tuple], frozenset[str]]] = {
    "f32-by-reflecting-object": (lambda: (F32_3(), Reflecting()), ALL_OPERATORS),
    # a 0-d integer tensor times a sequence repeats it (``*=`` raises either way)
    "i64-0d-by-list": (lambda: (torch.tensor(3), [1, 2]), frozenset({"*"})),
    "i64-0d-by-tuple": (lambda: (torch.tensor(3), (1, 2)), frozenset({"*"})),
}
if np is not None:
    NON_NUMERIC_RIGHT["f32-by-ndarray"] = (lambda: (F32_3(), ndarray()), ALL_OPERATORS)
    NON_NUMERIC_RIGHT["f32-2d-by-ndarray-2d"] = (lambda: (torch.ones(2, 3), np.ones((3, 2))),
                                                 frozenset({"@"}))

# How a right operand may be declared without being proven a tensor or a number.
UNPROVEN_RIGHT = {
    "unannotated": "y",
    "object": "y: object",
    "any": "y: typing.Any",
    "ndarray": "y: np.ndarray",
    "list": "y: list",
    "tuple": "y: tuple",
    "str": "y: str",
}

MATMUL_INPUTS: dict[str, Callable[[], tuple]] = {
    "f32-2d-2d": lambda: (floats(F32)[:12].reshape(3, 4), torch.arange(-4.0, 4.0).reshape(4, 2)),
    "f64-2d-2d": lambda: (floats(F64)[:12].reshape(3, 4),
                          torch.arange(-4.0, 4.0, dtype=F64).reshape(4, 2)),
    "f32-1d-1d": lambda: (torch.tensor([1.0, -0.0, 3.0]), torch.tensor([-0.0, 2.0, 0.5])),
    "f32-1d-2d": lambda: (torch.tensor([1.0, -2.0, 3.0]), torch.arange(6.0).reshape(3, 2)),
    "f32-2d-1d": lambda: (torch.arange(6.0).reshape(2, 3), torch.tensor([1.0, -2.0, 3.0])),
    "f32-batched": lambda: (torch.arange(24.0).reshape(2, 3, 4) - 12, torch.ones(4, 5)),
    "f32-batched-broadcast": lambda: (torch.arange(24.0).reshape(2, 1, 3, 4),
                                      torch.arange(40.0).reshape(5, 4, 2) - 20),
    "f32-batched-by-1d": lambda: (torch.arange(24.0).reshape(2, 3, 4), torch.ones(4)),
    "f16-2d-2d": lambda: (floats(F16)[:12].reshape(3, 4), torch.ones(4, 2, dtype=F16)),
    "i64-2d-2d": lambda: (ints(I64)[:9].reshape(3, 3), torch.arange(-4, 5).reshape(3, 3)),
    "bool-2d-2d": lambda: (torch.eye(2, dtype=BOOL), torch.ones(2, 2, dtype=BOOL)),
    "c64-2d-2d": lambda: (complexes()[:6].reshape(2, 3), torch.ones(3, 2, dtype=C64)),
    "empty-inner": lambda: (torch.empty(2, 0), torch.empty(0, 3)),
    "empty-outer": lambda: (torch.empty(0, 3), torch.ones(3, 2)),
    "0d": lambda: (torch.tensor(2.0), torch.tensor(3.0)),
    "shape-mismatch": lambda: (torch.ones(2, 3), torch.ones(2, 3)),
    "dtype-mismatch": lambda: (torch.ones(2, 3), torch.ones(3, 2, dtype=F64)),
    "non-contiguous": lambda: (torch.arange(12.0).reshape(4, 3).t(),
                               torch.arange(8.0).reshape(2, 4).t()),
    "subclass": lambda: (subclass(torch.ones(2, 3)), torch.ones(3, 2)),
    "f32-by-subclass": lambda: (torch.ones(2, 3), subclass(torch.arange(6.0).reshape(3, 2))),
}

# A single tensor operand.
UNARY_INPUTS: dict[str, Callable[[], tuple]] = {}
for _tag, _dtype in FLOAT_TAGS.items():
    UNARY_INPUTS[_tag] = partial(lambda d: (floats(d),), _dtype)
for _tag, _dtype in INT_TAGS.items():
    UNARY_INPUTS[_tag] = partial(lambda d: (ints(d),), _dtype)
UNARY_INPUTS.update({
    "bool": lambda: (bools(),),
    "c64": lambda: (complexes(),),
    "f32-0d-negzero": lambda: (torch.tensor(-0.0),),
    "i64-0d": lambda: (torch.tensor(-5),),
    "bool-0d": lambda: (torch.tensor(True),),
    "empty": lambda: (torch.empty(0, 3),),
    "non-contiguous": lambda: (floats(F32).reshape(1, -1).repeat(2, 1).t(),),
    "subclass": lambda: (subclass(floats(F32)),),
    "parameter": lambda: (parameter(floats(F64)),),
})

# A Python number on the left, a tensor on the right.
SCALARS: dict[str, object] = {
    "int(2)": 2, "int(-3)": -3, "int(0)": 0, "float(2.5)": 2.5, "float(-0.0)": -0.0,
    "float(nan)": NAN, "float(-inf)": -INF, "bool(True)": True, "bool(False)": False,
    "complex(1j)": 1j, "int(2**70)": 2**70,
}
if np is not None:  # a float subclass: what a ``float``-annotated parameter may receive
    SCALARS["numpy-float64(-1.5)"] = np.float64(-1.5)
SCALAR_LEFT_TENSORS: dict[str, Callable[[], torch.Tensor]] = {
    "f32": partial(floats, F32),
    "f64": partial(floats, F64),
    "f16": partial(floats, F16),
    "bf16": partial(floats, BF16),
    "i64": partial(ints, I64),
    "i64-nonzero": partial(ints, I64, zero=False),
    "u8-nonzero": partial(ints, U8, zero=False),
    "bool": bools,
    "c64": complexes,
    "f32-0d-negzero": partial(torch.tensor, -0.0),
    "i64-0d": partial(torch.tensor, -3),
    "empty": partial(torch.empty, 0, 2),
    "subclass": lambda: subclass(floats(F32)),
}

# Operands of ``not`` in a condition: it truth-tests a tensor with one element.
NOT_INPUTS: dict[str, Callable[[], tuple]] = {
    "f32-0d-zero": lambda: (torch.tensor(0.0),),
    "f32-0d-negzero": lambda: (torch.tensor(-0.0),),
    "f32-0d-nan": lambda: (torch.tensor(NAN),),
    "f32-0d-one": lambda: (torch.tensor(1.0),),
    "f16-0d-negzero": lambda: (torch.tensor(-0.0, dtype=F16),),
    "i64-0d-zero": lambda: (torch.tensor(0),),
    "bool-0d-false": lambda: (torch.tensor(False),),
    "c64-0d-zero": lambda: (torch.tensor(0j),),
    "f32-shape-1-zero": lambda: (torch.tensor([0.0]),),
    "f32-two-elements": lambda: (torch.tensor([0.0, 1.0]),),
    "f32-empty": lambda: (torch.empty(0),),
    "requires-grad-0d": lambda: (torch.tensor(0.0, requires_grad=True),),
}


def inplace(x: torch.Tensor, y: object) -> tuple:
    """``x`` as a view into a larger base tensor, so writes must show through the base."""
    base = torch.stack([x, torch.zeros_like(x)])
    return base[0], y


def inplace_grid(dtype: torch.dtype) -> tuple:
    a, b = float_grid(dtype)
    return inplace(a.expand(a.shape[0], b.shape[1]).contiguous(), b)


def leaf_view() -> tuple:
    leaf = torch.ones(2, 3, requires_grad=True)
    return leaf[0], torch.ones(3)


INPLACE_INPUTS: dict[str, Callable[[], tuple]] = {
    f"{tag}-grid": partial(inplace_grid, FLOAT_TAGS[tag]) for tag in ("f16", "f32", "f64")}
INPLACE_INPUTS.update({
    "i64-grid": lambda: inplace(ints(I64)[:, None].repeat(1, 10), ints(I64, zero=False)[None]),
    "i8-grid": lambda: inplace(ints(I8)[:, None].repeat(1, 10), ints(I8, zero=False)[None]),
    "bool-grid": lambda: inplace(torch.tensor([[False, False], [True, True]]),
                                 torch.tensor([[False, True]])),
    "c64-by-c64": lambda: inplace(complexes(), complexes().flip(0)),
    # dtype: the result must be castable to x's dtype
    "f32-by-f64": lambda: inplace(floats(F32), floats(F64).flip(0)),
    "i64-by-f32-tensor": lambda: inplace(ints(I64), torch.full((11,), 2.5)),
    "i64-by-float(2.5)": lambda: inplace(ints(I64), 2.5),
    "i64-by-int(-3)": lambda: inplace(ints(I64), -3),
    "u8-by-i8-tensor": lambda: inplace(ints(U8, zero=False), torch.ones(5, dtype=I8)),
    "bool-by-int(1)": lambda: inplace(bools(), 1),
    "f32-by-float(nan)": lambda: inplace(floats(F32), NAN),
    "f32-by-complex(1j)": lambda: inplace(floats(F32), 1j),
    # shapes: y may broadcast to x, never x to y
    "f32-0d-by-f32-1d": lambda: inplace(torch.tensor(2.0), torch.ones(3)),
    "f32-row-by-matrix": lambda: inplace(torch.ones(3), torch.ones(2, 3)),
    "f32-matrix-by-row": lambda: inplace(torch.ones(2, 3), torch.tensor([-0.0, 2.0, NAN])),
    "non-contiguous": lambda: (torch.arange(-6.0, 6.0).reshape(3, 4).t(),
                               torch.arange(12.0).reshape(4, 3) - 5),
    # tensors that must not be written in place
    "expanded": lambda: (torch.zeros(1).expand(3), torch.ones(3)),
    "leaf-requiring-grad": lambda: (torch.ones(3, requires_grad=True), torch.ones(3)),
    "view-of-leaf-requiring-grad": leaf_view,
    # subclasses keep their identity
    "parameter": lambda: (parameter(floats(F32)), floats(F32).flip(0)),
    "subclass": lambda: inplace(subclass(floats(F32)), 2.0),
    "f32-by-subclass": lambda: inplace(floats(F32), subclass(floats(F32).flip(0))),
})
if np is not None:
    INPLACE_INPUTS["f32-by-numpy-float64"] = lambda: inplace(F32_3(), np.float64(-2.5))
INPLACE_RIGHT = {name: annotation(make()[1]) for name, make in INPLACE_INPUTS.items()}


# -- snippets and cases ----------------------------------------------------------------------

HEADER = "import torch\n\n\n"
# Snippets that only the rewriter reads may name other modules in their annotations.
UNPROVEN_HEADER = "import typing\n\nimport numpy as np\nimport torch\n\n\n"


@dataclass(frozen=True)
class Case:
    """One rule, one snippet, and the inputs to call it with (named ``inputs``).

    ``batch`` holds more inputs run by the same test (every tensor for one scalar on the
    left); each failing one is reported, by name, in the test's failure message.

    ``expect`` says how the rewritten code must compare with the original: ``same`` (the
    strict comparison), ``both-raise`` (a documented change of exception type: both must
    raise, with any type), or ``differs`` (a rewrite that its guards forbid, forced by lying
    annotations, to show that the guard prevents a real difference).
    """

    rule: str
    snippet: str
    source: str
    inputs: str
    make: Callable[[], tuple] | None = None
    batch: tuple[tuple[str, Callable[[], tuple]], ...] = ()
    expect: str = "same"

    @property
    def id(self) -> str:
        return f"{self.rule}|{self.snippet}|{self.inputs}"

    def runs(self) -> list[tuple[str, Callable[[], tuple]]]:
        return [(self.inputs, self.make)] if self.make is not None else list(self.batch)


@dataclass(frozen=True)
class Unchanged:
    """A snippet that the rule must leave alone (``snippet`` says why)."""

    rule: str
    snippet: str
    source: str

    @property
    def id(self) -> str:
        return f"{self.rule}|{self.snippet}"


def _function(params: str, body: str, header: str = HEADER) -> str:
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    return f"{header}def f({params}):\n{lines}"


def _forced_cases(rule: str, op: str, body: str,
                  prepare: Callable[[tuple], tuple] = lambda args: args) -> list[Case]:
    """A right operand that is neither tensor nor number, declared a tensor to force the rule:
    the outcome changes wherever ``NON_NUMERIC_RIGHT`` says so."""
    source = _function("x: torch.Tensor, y: torch.Tensor", body)
    return [Case(rule, "forced", source, name, lambda make=make: prepare(make()), expect="differs")
            for name, (make, operators) in NON_NUMERIC_RIGHT.items() if op in operators]


def _unproven_right(rule: str, body: str) -> list[Unchanged]:
    return [Unchanged(rule, f"right-{tag}",
                      _function(f"x: torch.Tensor, {params}", body, UNPROVEN_HEADER))
            for tag, params in UNPROVEN_RIGHT.items()]


def _binary_cases(rule: str, op: str) -> list[Case]:
    cases = [Case(rule, "x-op-y", _function(f"x: torch.Tensor, y: {BINARY_RIGHT[name]}",
                                            f"return x {op} y"), name, make)
             for name, make in BINARY_INPUTS.items()]
    cases += [Case(rule, "chain", _function(f"x: torch.Tensor, y: {BINARY_RIGHT[name]}",
                                            f"return x {op} y {op} y"), name, BINARY_INPUTS[name])
              for name in ("f32-grid", "i64-grid", "f32-by-int(-3)")]
    source = _function("x: torch.Tensor", f"return x {op} -2")
    cases.append(Case(rule, "literal(-2)", source, "each-tensor", batch=tuple(
        (name, UNARY_INPUTS[name]) for name in ("f32", "i64", "bool", "f32-0d-negzero"))))
    return cases + _forced_cases(rule, op, f"return x {op} y")


def _binary_unchanged(rule: str, op: str) -> list[Unchanged]:
    # a tuple is not a number, whatever its items are
    tuple_operand = _function("x: torch.Tensor, y: int", f"return x {op} (2, y)")
    return [*_unproven_right(rule, f"return x {op} y"),
            Unchanged(rule, "tuple-operand", tuple_operand)]


def _matmul_cases(rule: str, op: str) -> list[Case]:
    source = _function("x: torch.Tensor, y: torch.Tensor", f"return x {op} y")
    cases = [Case(rule, "x-op-y", source, name, make) for name, make in MATMUL_INPUTS.items()]
    source = _function("x: torch.Tensor, y: torch.Tensor", f"return x {op} y {op} y.mT")
    cases.append(Case(rule, "chain", source, "f32-2d-2d", MATMUL_INPUTS["f32-2d-2d"]))
    return cases + _forced_cases(rule, op, f"return x {op} y")


def _matmul_unchanged(rule: str, op: str) -> list[Unchanged]:
    # both operands must be tensors: a number is no operand of @
    numbers = [Unchanged(rule, f"right-{number_type}",
                         _function(f"x: torch.Tensor, y: {number_type}", f"return x {op} y"))
               for number_type in ("int", "float")]
    left = Unchanged(rule, "left-unannotated", _function("x, y: torch.Tensor", f"return x {op} y"))
    return [*_unproven_right(rule, f"return x {op} y"), *numbers, left]


def _scalar_left_inputs(scalar: object, tensor: Callable[[], torch.Tensor]) -> tuple:
    return scalar, tensor()


def _each_tensor(scalar_name: str, scalar: object) -> tuple[tuple[str, Callable], ...]:
    return tuple((f"{scalar_name}-by-{t_name}", partial(_scalar_left_inputs, scalar, tensor))
                 for t_name, tensor in SCALAR_LEFT_TENSORS.items())


# The left operand is a call: whether the rule may fire depends on whether it keeps the order.
ITEM_INPUTS: dict[str, Callable[[], tuple]] = {
    "f64-0d-by-f32": lambda: (torch.tensor(-2.5), floats(F32)),
    "i64-0d-by-i64": lambda: (torch.tensor(-3), ints(I64, zero=False)),
    "bool-0d-by-f16": lambda: (torch.tensor(True), floats(F16)),
}


def _order_sensitive(op: str) -> dict[str, tuple[str, str, tuple[tuple[str, Callable], ...]]]:
    """Snippets whose left operand is not ``simple``: (parameters, body, inputs)."""
    evaluation_order = (f"order = []\nvalue = float(order.append('left') or 3) {op} "
                        "torch.add(x, order.append('right') or 0)\nreturn value, order")
    return {
        "item-op-x": ("s: torch.Tensor, x: torch.Tensor", f"return s.item() {op} x",
                      tuple(ITEM_INPUTS.items())),
        # operands with side effects: Python evaluates the left operand first
        "evaluation-order": ("x: torch.Tensor", evaluation_order,
                             (("f32", UNARY_INPUTS["f32"]),)),
        "item-then-mutate": ("s: torch.Tensor", f"return s.item() {op} s.add_(1)",
                             (("f32-0d", lambda: (torch.tensor(2.0),)),)),
    }


def _scalar_left_cases(rule: str, op: str) -> list[Case]:
    cases = [Case(rule, "a-op-x", _function(f"a: {annotation(scalar)}, x: torch.Tensor",
                                            f"return a {op} x"),
                  f"{s_name}-by-each-tensor", batch=_each_tensor(s_name, scalar))
             for s_name, scalar in SCALARS.items()]
    for literal in ("-0.0", "True"):
        source = _function("x: torch.Tensor", f"return {literal} {op} x")
        cases.append(Case(rule, f"literal({literal})", source, "each-tensor", batch=tuple(
            (name, UNARY_INPUTS[name]) for name in ("f32", "i64", "bool", "f32-0d-negzero"))))
    # names bound to a call, and arithmetic on names, are simple
    source = _function("s: torch.Tensor, x: torch.Tensor", f"a = s.item()\nreturn a {op} x")
    cases += [Case(rule, "item-name-op-x", source, name, make)
              for name, make in ITEM_INPUTS.items()]
    for s_name in ("int(-3)", "float(2.5)"):
        scalar = SCALARS[s_name]
        source = _function(f"a: {annotation(scalar)}, x: torch.Tensor",
                           f"return (2 * -a - 1) {op} x")
        cases.append(Case(rule, "arithmetic-op-x", source, f"{s_name}-by-each-tensor",
                          batch=_each_tensor(s_name, scalar)))
    if not swaps_operands(rule):  # the rewrite keeps the order: any scalar will do
        for snippet, (params, body, inputs) in _order_sensitive(op).items():
            cases += [Case(rule, snippet, _function(params, body), name, make)
                      for name, make in inputs]
    return cases


def _scalar_left_unchanged(rule: str, op: str) -> list[Unchanged]:
    if not swaps_operands(rule):
        return []
    return [Unchanged(rule, snippet, _function(params, body))
            for snippet, (params, body, _) in _order_sensitive(op).items()]


UNARY_VARIANTS = {
    "-x": {"nested": "return -(-x)", "method-operand": "return -x.abs()"},
    "~x": {"nested": "return ~(~x)", "comparison-operand": "return ~(x > 0)"},
    "x ** 0.5": {"nested": "return (x ** 0.5) ** 0.5", "short-literal": "return x ** .5",
                 "negated": "return -x ** 0.5", "norm": "return (x * x).sum() ** 0.5"},
}
# pow-half-to-sqrt is exact for these; float16 differs as documented (see its own test).
SQRT_EXACT_INPUTS = [name for name in UNARY_INPUTS if name != "f16"]


def _invert_raises(rule: str, body: str, make: Callable[[], tuple]) -> bool:
    """``~`` applied to a float or complex tensor: both versions raise, with different types."""
    if rule != "invert-to-bitwise-not" or "~x" not in body:  # not ``~(x > 0)``
        return False
    x = make()[0]
    return x.is_floating_point() or x.is_complex()


def _unary_cases(rule: str, expression: str) -> list[Case]:
    body = f"return {expression}"
    source = _function("x: torch.Tensor", body)
    names = SQRT_EXACT_INPUTS if rule == "pow-half-to-sqrt" else list(UNARY_INPUTS)
    variant_names = ("f32", "bf16" if rule == "pow-half-to-sqrt" else "f16", "i64", "bool")
    cases = [Case(rule, "op-x", source, name, UNARY_INPUTS[name],
                  expect="both-raise" if _invert_raises(rule, body, UNARY_INPUTS[name]) else "same")
             for name in names]
    for variant, body in UNARY_VARIANTS[expression].items():
        cases += [Case(rule, variant, _function("x: torch.Tensor", body), name, UNARY_INPUTS[name],
                       expect="both-raise" if _invert_raises(rule, body, UNARY_INPUTS[name])
                       else "same")
                  for name in variant_names]
    return cases


CONDITION_SNIPPETS = {
    "if": "if not x:\n    return 'then'\nreturn 'else'",
    "while": "turns = 0\nwhile not x and turns < 3:\n    turns += 1\nreturn turns",
    "ternary": "return 'then' if not x else 'else'",
    "assert": "assert not x, 'x is truthy'\nreturn 'passed'",
    "and": "if len(x.shape) >= 0 and not x:\n    return 'then'\nreturn 'else'",
    "or-short-circuit": "if x.numel() == 0 or not x:\n    return 'then'\nreturn 'else'",
    "double-not": "if not not x:\n    return 'then'\nreturn 'else'",
    "any": "if not x.any():\n    return 'then'\nreturn 'else'",
}


def _condition_cases(rule: str, _: str) -> list[Case]:
    return [Case(rule, snippet, _function("x: torch.Tensor", body), name, make)
            for snippet, body in CONDITION_SNIPPETS.items()
            for name, make in NOT_INPUTS.items()]


def _not_anywhere_cases(rule: str, op: str) -> list[Case]:
    # In conditions the unsafe rule must be exactly as good as the safe one.
    return [c for c in _condition_cases(rule, op) if c.snippet in ("if", "ternary", "and")]


NOT_VALUE_SNIPPETS = {
    "return": "return not x",
    "assign": "flag = not x\nreturn flag",
}
NOT_VALUE_CASES = [Case("not-to-logical-not-anywhere", snippet, _function("x: torch.Tensor", body),
                        name, make)
                   for snippet, body in NOT_VALUE_SNIPPETS.items()
                   for name, make in NOT_INPUTS.items()]


def _as_inplace(args: tuple) -> tuple:
    return inplace(*args)


def _inplace_cases(rule: str, op: str) -> list[Case]:
    body = f"alias = x.view_as(x)\nx {op} y\nreturn x, alias"
    cases = [Case(rule, "augmented", _function(f"x: torch.Tensor, y: {INPLACE_RIGHT[name]}",
                                               body), name, make)
             for name, make in INPLACE_INPUTS.items()]
    body = f"x {op} y\nx {op} y\nreturn x"
    cases.append(Case(rule, "twice", _function("x: torch.Tensor, y: torch.Tensor", body),
                      "f32-grid", INPLACE_INPUTS["f32-grid"]))
    return cases + _forced_cases(rule, op, f"alias = x.view_as(x)\nx {op} y\nreturn x, alias",
                                 _as_inplace)


def _inplace_unchanged(rule: str, op: str) -> list[Unchanged]:
    # a tuple on the right is one operand, with or without parentheses, and not a number
    tuples = [Unchanged(rule, snippet, _function("x: torch.Tensor, y: torch.Tensor",
                                                 f"x {op} {rhs}\nreturn x"))
              for snippet, rhs in (("tuple-rhs", "2, y"), ("tuple-rhs-trailing-comma", "y,"),
                                   ("tuple-rhs-parenthesised", "(2, y)"))]
    return [*_unproven_right(rule, f"x {op} y\nreturn x"), *tuples]


# Which snippets each rule is tested with, derived from the pack (no hand-kept list).
FAMILIES: dict[str, tuple[str, str]] = {
    rule.id: family for rule in PACK.rules if (family := family_of(rule)) is not None}


BUILDERS = {
    "binary": _binary_cases,
    "matmul": _matmul_cases,
    "scalar_left": _scalar_left_cases,
    "unary": _unary_cases,
    "condition": _condition_cases,
    "not_anywhere": _not_anywhere_cases,
    "inplace": _inplace_cases,
}
UNCHANGED_BUILDERS = {
    "binary": _binary_unchanged,
    "matmul": _matmul_unchanged,
    "scalar_left": _scalar_left_unchanged,
    "inplace": _inplace_unchanged,
}

CASES: list[Case] = []  # the rule fires: same behaviour (or a documented difference)
FORCED: list[Case] = []  # the rule is forced where its guards forbid it: behaviour changes
UNCHANGED: list[Unchanged] = []  # the rule must not fire
for _rule in PACK.rules:
    if _rule.id in FAMILIES:
        _family, _op = FAMILIES[_rule.id]
        for _case in BUILDERS[_family](_rule.id, _op):
            (FORCED if _case.expect == "differs" else CASES).append(_case)
        if _family in UNCHANGED_BUILDERS:
            UNCHANGED += UNCHANGED_BUILDERS[_family](_rule.id, _op)


# -- tests -----------------------------------------------------------------------------------


def test_every_rule_is_exercised():
    """A rule added to the pack must get cases here (a family that ``family_of`` finds).

    Only cases where the rule fires and is compared count: a rule whose guards stopped it
    from firing everywhere would leave nothing but ``unchanged`` checks.
    """
    exercised = {case.rule for case in CASES if case.expect == "same"}
    exercised |= {case.rule for case in NOT_VALUE_CASES} | {case.rule for case in GRAD_CASES}
    assert exercised == {rule.id for rule in PACK.rules}
    assert set(FAMILIES) == {rule.id for rule in PACK.rules}


def _check_outcome(case: Case, before: Observed, after: Observed) -> None:
    if case.expect == "same":
        assert_same_outcome(before, after)
    elif case.expect == "both-raise":
        assert before.error is not None and after.error is not None, (
            f"expected both to raise\n  original:  {before.error or before.value!r}\n"
            f"  rewritten: {after.error or after.value!r}")
        assert_same(before.inputs, after.inputs, "inputs after the call")
    else:
        assert case.expect == "differs", case.expect
        try:
            assert_same_outcome(before, after)
        except AssertionError:
            return
        raise AssertionError("the forced rewrite behaves the same: the guard is not needed here")


def _compare_runs(case: Case, observer: Callable[[Callable, tuple], Observed]) -> None:
    original, rewrite = load(case.source), load(rewritten(case.rule, case.source))
    runs = case.runs()
    if len(runs) == 1:
        _check_outcome(case, observer(original, runs[0][1]()), observer(rewrite, runs[0][1]()))
        return
    failures = []
    for name, make in runs:
        try:
            _check_outcome(case, observer(original, make()), observer(rewrite, make()))
        except AssertionError as failure:
            failures.append(f"[{name}] {failure}")
    assert not failures, f"{len(failures)} of {len(runs)} inputs differ:\n" + "\n".join(failures)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_rewrite_preserves_behaviour(case: Case):
    _compare_runs(case, observe)


@pytest.mark.parametrize("case", UNCHANGED, ids=lambda case: case.id)
def test_rule_does_not_fire(case: Unchanged):
    """Operands the guards cannot prove (see the forced rewrites for what would go wrong)."""
    assert_unchanged(case.rule, case.source)


@pytest.mark.parametrize("case", FORCED, ids=lambda case: case.id)
def test_forced_rewrite_would_change_behaviour(case: Case):
    """Why the right operand must be proven: declared a tensor (falsely) to force the rule,
    a numpy array or an object with reflected operators gets a different outcome."""
    _compare_runs(case, observe)


def test_order_swapping_rules_require_simple_left_operands():
    """The scalar-left rules that evaluate ``$b`` first are exactly those guarded by simple."""
    scalar_left = [rule for rule, (family, _) in FAMILIES.items() if family == "scalar_left"]
    swapping = {rule for rule in scalar_left if swaps_operands(rule)}
    guarded = {rule for rule in scalar_left
               if any(c.guard == "simple" for c in RULES[rule].where)}
    assert swapping == guarded
    assert swapping == {"add-scalar-left", "sub-scalar-left-to-rsub", "mul-scalar-left",
                        "div-scalar-left"}


@pytest.mark.parametrize("case", NOT_VALUE_CASES, ids=lambda case: case.id)
def test_unsafe_not_anywhere_in_value_context(case: Case):
    """``not x`` as a value: the rule is unsafe because the result becomes a tensor.

    The type change is the documented cost, and so is this: where ``not x`` raises (a tensor
    of several elements, or none), logical_not returns the elementwise negation instead.
    Everything else must hold: the tensor's truth value is the original bool.
    """
    before = observe(load(case.source), case.make())
    after = observe(load(rewritten(case.rule, case.source)), case.make())
    (x,) = case.make()
    if before.error is not None:
        assert type(before.error) is RuntimeError, repr(before.error)
        assert x.numel() != 1, "only the truth value of several elements or none is ambiguous"
        assert after.error is None, f"rewritten raised {after.error!r}"
        assert isinstance(after.value, torch.Tensor) and after.value.dtype == BOOL
        assert_same(torch.logical_not(x), after.value, "rewritten result")
        assert_same(before.inputs, after.inputs, "inputs after the call")
        return
    assert after.error is None, f"rewritten raised {after.error!r}"
    assert type(before.value) is bool
    assert isinstance(after.value, torch.Tensor) and after.value.dtype == BOOL
    assert bool(after.value) is before.value
    assert_same(before.inputs, after.inputs, "inputs after the call")


SQRT = "pow-half-to-sqrt"
SQRT_SOURCE = _function("x: torch.Tensor", "return x ** 0.5")


def test_pow_half_to_sqrt_is_unsafe():
    """The rule runs only on request: the following tests show why."""
    assert RULES[SQRT].safety == "unsafe"
    assert SQRT not in {rule.id for rule in select_rules(PACK.rules, RewriteOptions())}


def test_pow_half_to_sqrt_float16_special_values_differ():
    """Documented: for float16, ``(-0.0) ** 0.5`` is 0.0 where sqrt gives -0.0, and
    ``(-inf) ** 0.5`` is inf where sqrt gives nan. Every other value agrees bit for bit."""
    f = floats(F16)  # and the negatives of its positive finite values, and a negative NaN
    x = torch.cat([f, -f[torch.isfinite(f) & (f > 0)], -f[f.isnan()]])
    before = observe(load(SQRT_SOURCE), (x.clone(),))
    after = observe(load(rewritten(SQRT, SQRT_SOURCE)), (x.clone(),))
    assert before.error is None and after.error is None
    differ = before.value.view(torch.int16) != after.value.view(torch.int16)  # by bits
    assert_same(torch.tensor([-0.0, -INF], dtype=F16), x[differ], "inputs where they differ")
    assert_same(torch.tensor([0.0, INF], dtype=F16), before.value[differ], "x ** 0.5")
    sqrt = after.value[differ]
    assert_same(torch.tensor(-0.0, dtype=F16), sqrt[0], "torch.sqrt(-0.0)")
    assert torch.isnan(sqrt[1]), f"torch.sqrt(-inf) is {sqrt[1]}"
    assert_same(before.value[~differ], after.value[~differ], "every other value")


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_pow_half_to_sqrt_gradient_nan_sign_differs_at_negative_inputs(dtype: torch.dtype):
    """Documented: at negative inputs both gradients are NaN, of opposite signs (pow's is
    negative). Values agree, and so do gradients at non-negative inputs (tested below)."""
    x = torch.tensor([-2.0, -1e-30, -INF], dtype=dtype)
    before = observe_grad(load(SQRT_SOURCE), (x.clone().requires_grad_(),))
    after = observe_grad(load(rewritten(SQRT, SQRT_SOURCE)), (x.clone().requires_grad_(),))
    assert before.error is None and after.error is None
    assert_same(before.value[0], after.value[0], "values")
    (grad_before,), (grad_after,) = before.value[1], after.value[1]
    assert torch.isnan(grad_before).all() and torch.isnan(grad_after).all()
    assert torch.signbit(grad_before).all(), f"pow's gradient: {grad_before}"
    assert not torch.signbit(grad_after).any(), f"sqrt's gradient: {grad_after}"


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_pow_half_to_sqrt_gradient_differs_at_ordinary_positive_inputs(dtype: torch.dtype):
    """Documented (safety_note, measured by benchmarks/pow_half_gradients.py): the backward
    formulas round differently, so at positive inputs some gradients differ, by a rounding:
    within 2 eps relative. Values stay bit for bit equal."""
    x = torch.linspace(0.01, 100.0, 20_000, dtype=dtype)
    grad = torch.randn(x.shape, dtype=dtype, generator=torch.Generator().manual_seed(0))
    original, rewrite = load(SQRT_SOURCE), load(rewritten(SQRT, SQRT_SOURCE))
    before, after = x.clone().requires_grad_(), x.clone().requires_grad_()
    value_before, value_after = original(before), rewrite(after)
    value_before.backward(grad)
    value_after.backward(grad)
    assert_same(value_before, value_after, "values")
    differ = before.grad != after.grad
    assert 0.05 < differ.double().mean().item() < 0.6, differ.double().mean()
    relative = ((before.grad - after.grad).abs() / after.grad.abs()).max().item()
    assert 0 < relative <= 2 * torch.finfo(dtype).eps, relative
    assert "positive inputs" in RULES[SQRT].safety_note


# -- gradients -------------------------------------------------------------------------------


def _grad_floats(dtype: torch.dtype, nonnegative: bool = False) -> torch.Tensor:
    if nonnegative:  # and signed zero, infinity, NaN
        return torch.tensor([0.0, -0.0, 1.5, 3.0, 0.25, 1e-30, INF, NAN], dtype=dtype)
    return torch.tensor([0.0, -0.0, 1.5, -2.0, 3.0, 0.25, 1e-30, 4.0], dtype=dtype)


def _grad_inputs(family: str, dtype: torch.dtype, nonnegative: bool = False) -> tuple:
    x = _grad_floats(dtype, nonnegative).requires_grad_()
    y = _grad_floats(dtype).flip(0).requires_grad_()
    if family == "binary":
        return x, y
    if family == "matmul":
        return x.detach().reshape(2, 4).requires_grad_(), y.detach().reshape(4, 2).requires_grad_()
    if family == "scalar_left":
        return 2.5, x
    return (x,)


GRAD_SNIPPETS = {
    "binary": ("x: torch.Tensor, y: torch.Tensor", "return x {op} y"),
    "matmul": ("x: torch.Tensor, y: torch.Tensor", "return x {op} y"),
    "scalar_left": ("a: float, x: torch.Tensor", "return a {op} x"),
    "unary": ("x: torch.Tensor", "return {op}"),
}
GRAD_CASES = [
    Case(rule, "grad", _function(GRAD_SNIPPETS[family][0],
                                 GRAD_SNIPPETS[family][1].format(op=op)),
         tag + ("-nonnegative" if rule == SQRT else ""),
         partial(_grad_inputs, family, dtype, nonnegative=rule == SQRT))
    for rule, (family, op) in FAMILIES.items()
    if family in GRAD_SNIPPETS and rule != "invert-to-bitwise-not"
    for tag, dtype in (("f32", F32), ("f64", F64))
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda case: case.id)
def test_rewrite_preserves_gradients(case: Case):
    _compare_runs(case, observe_grad)


# -- tensor subclasses with operators of their own -------------------------------------------

# Each rule's basic snippet, with an ``Overriding`` tensor where Python asks it first.
OVERRIDING_SNIPPETS: dict[str, tuple[str, str, Callable[[], tuple]]] = {
    "binary": ("x: torch.Tensor, y: torch.Tensor", "return x {op} y",
               lambda: (floats(F32), overriding(floats(F32)))),
    "matmul": ("x: torch.Tensor, y: torch.Tensor", "return x {op} y",
               lambda: (torch.ones(2, 3), overriding(torch.ones(3, 2)))),
    "scalar_left": ("a: float, x: torch.Tensor", "return a {op} x",
                    lambda: (2.5, overriding(floats(F32)))),
    "unary": ("x: torch.Tensor", "return {op}", lambda: (overriding(ints(I64)),)),
    "condition": ("x: torch.Tensor", "if not x:\n    return 'then'\nreturn 'else'",
                  lambda: (overriding(torch.tensor(0.0)),)),
    "not_anywhere": ("x: torch.Tensor", "if not x:\n    return 'then'\nreturn 'else'",
                     lambda: (overriding(torch.tensor(0.0)),)),
    "inplace": ("x: torch.Tensor, y: torch.Tensor", "x {op} y\nreturn x",
                lambda: (overriding(floats(F32)), floats(F32))),
}
OVERRIDING_CASES = [
    Case(rule, "overriding-subclass", _function(OVERRIDING_SNIPPETS[family][0],
                                                OVERRIDING_SNIPPETS[family][1].format(op=op)),
         "overriding", OVERRIDING_SNIPPETS[family][2])
    for rule, (family, op) in FAMILIES.items()
]


@pytest.mark.parametrize("case", OVERRIDING_CASES, ids=lambda case: case.id)
def test_tensor_subclass_with_its_own_operators(case: Case):
    """A ``torch.Tensor`` annotation admits subclasses, and a subclass may define operators
    (a reflected one wins even against a plain tensor on the left). The rewritten torch
    function bypasses them: the pack's description documents this limit (subclasses are
    expected to customise through ``__torch_function__``), and this test shows it is real."""
    assert "__torch_function__" in PACK.description
    with pytest.raises(AssertionError):
        _compare_runs(case, observe)


# -- the comparison itself must be strict ----------------------------------------------------

DIFFERENT = {
    "sign-of-zero": ("return x * 1", "return x + 0.0", lambda: (torch.tensor([-0.0, 1.0]),)),
    "nan-sign": ("return x.clone()", "return -x", lambda: (torch.tensor([NAN]),)),
    "dtype": ("return x / 2", "return (x / 2).double()", lambda: (torch.ones(2),)),
    "strides": ("return x.clone()", "return x.t().contiguous().t()",
                lambda: (torch.ones(2, 3),)),
    "raises-vs-returns": ("return x // 0", "return torch.div(x, 0)",
                          lambda: (torch.ones(2, dtype=I64),)),
    "exception-type": ("return x + None", "raise ValueError", lambda: (torch.ones(2),)),
    "rebinding-instead-of-in-place": ("x += y\nreturn x", "x = x + y\nreturn x",
                                      lambda: (torch.ones(2), torch.ones(2))),
    "alias-not-updated": ("alias = x.view_as(x)\nx += y\nreturn alias", "alias = x.view_as(x)\n"
                          "x = x + y\nreturn alias", lambda: (torch.ones(2), torch.ones(2))),
    "subclass-lost": ("return x + 1", "return x.as_subclass(torch.Tensor) + 1",
                      lambda: (subclass(torch.ones(2)),)),
}


@pytest.mark.parametrize("name", DIFFERENT)
def test_comparison_catches(name: str):
    """Self-check of the harness: each pair differs in one observable way, and it is caught."""
    original, mutant, make = DIFFERENT[name]
    params = "x: torch.Tensor" + (", y" if "y" in original else "")
    before = observe(load(_function(params, original)), make())
    after = observe(load(_function(params, mutant)), make())
    with pytest.raises(AssertionError):
        assert_same_outcome(before, after)
