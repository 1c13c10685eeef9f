"""Property tests of the equivalence pack: every rule's examples, run on random tensors.

The cases come from the pack itself: each ``before`` example of each rule (a function ``f``)
is rewritten by that rule alone, and both versions are called on the same arguments: a
battery of tensors in every dtype (float16, bfloat16, integers, uint8, bool...), every
layout (contiguous, transposed, strided, expanded, channels-last, 0-dim, empty) and with
boundary values (-0.0, ±inf, NaN of both signs, the largest finite value, integer limits).
``ARGUMENTS`` says how a rule's function is fed (most take one tensor).

A ``safe`` rule must be exact: the same exception type where the original raises, else the
same result and the same inputs afterwards, bit for bit (NaNs compare by position and sign
bit, not payload), with the same dtype, shape, strides and aliasing, and the oracle's strict
comparison must find no difference. An ``unsafe`` rule may differ only in the ways its
description names (``ALLOWED``), and ``WITNESSES`` shows each such difference for real, so
its label stays justified.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable

import pytest
import torch
from eqrewrite.oracle.generate import generate
from eqrewrite.oracle.judging.compare import CompareOptions, compare
from eqrewrite.rewriter.kinds.equivalence.transpose_round_trip import FUNCTIONS
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import (
    RewriteError,
    RewriteOptions,
    rewrite_source,
    select_rules,
)

PACK = load_pack("equivalences")
RULES = {rule.id: rule for rule in select_rules(PACK.rules, RewriteOptions(unsafe=True))}
FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
DTYPES = FLOATS + INTS + (torch.bool,)
_SPECIALS = {torch.float16: 65504.0, torch.bfloat16: 3.3895e38, torch.float32: 3.4028e38,
             torch.float64: 1.79e308}


def _values(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """A contiguous tensor with boundary values in its first elements."""
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype in INTS:
        info = torch.iinfo(dtype)
        values = torch.randint(-9, 10, shape, generator=generator).to(dtype)
        specials = [info.max, info.min, info.max - 1, 0]
    else:
        values = (torch.randn(shape, generator=generator) * 3).to(dtype)
        big = _SPECIALS[dtype]
        specials = [-0.0, float("inf"), float("-inf"), float("nan"), -float("nan"), big,
                    -big, 0.0, 1e-30]
    flat = values.view(-1)
    count = min(len(specials), flat.numel() // 2)
    flat[:count] = torch.tensor(specials[:count]).to(dtype)
    return values


def battery(dtypes=DTYPES) -> list[tuple[str, torch.Tensor]]:
    """One tensor per dtype and layout (fresh every call: rules may write into them)."""
    cases = []
    for index, dtype in enumerate(dtypes):
        base = _values(dtype, (4, 6), index)
        cube = _values(dtype, (2, 3, 4, 5), index + 100)
        cases += [
            ("contiguous", base), ("transposed", base.t()), ("strided", base[:, ::2]),
            ("offset", base[1:]), ("expanded", base[:1].expand(3, 6)),
            ("rank3", cube[0]), ("permuted", cube.permute(3, 1, 0, 2)), ("rank4", cube),
            ("channels-last", cube.contiguous(memory_format=torch.channels_last)),
            # a channels-last tensor with one channel and a last dimension of 1: contiguous,
            # with strides of size-1 dimensions that view(dtype) reads (a campaign's finding)
            ("size-one-dims", cube[:, :1, :, :1].contiguous(memory_format=torch.channels_last)),
            ("scalar", base[0, 0]), ("vector", base[0]), ("empty", base[:0]),
        ]
    return [(f"{dtype_name(t.dtype)}-{label}", t) for label, t in cases]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---- how each rule's example function is called ---------------------------------------------


def _one(x):
    return [(x,)]


def _two_like(x):
    """y with x's shape: the same dtype, another dtype, a broadcast row, a bigger shape."""
    pairs = [(x, torch.roll(x, 1))]
    other = torch.float32 if x.dtype != torch.float32 else torch.int32
    pairs.append((x, torch.roll(x, 1).to(other)))
    if x.dim():
        pairs.append((x, x[..., :1].contiguous()))
        pairs.append((x, torch.roll(x, 1).unsqueeze(0).expand(2, *x.shape).contiguous()))
    return pairs


def _condition_and_branches(x):
    return [((x > 0) if x.dtype != torch.bool else x, x, torch.roll(x, 1)),
            (torch.ones_like(x, dtype=torch.bool), x, x.flip(0) if x.dim() else x)]


def _write_column(x):
    if x.dim() < 2:
        return [(x, x)]
    return [(x, torch.roll(x[:, 0], 1).contiguous())]


def _matrices(x):
    if x.dim() != 2:
        return []
    k = x.shape[1]
    a = torch.roll(x.t()[:, :3].contiguous(), 1) if k else x.t()[:, :3]
    return [(x, a, torch.roll(a, 1)), (x, a, a.to(torch.int64))]


def _same_shape_triples(x):
    return [(x, torch.roll(x, 1), torch.roll(x, 2)), (x, torch.roll(x, 1), x.to(torch.int64))]


def _transposed_pair(x):
    return [(x, x.mT)] if x.dim() >= 2 else [(x, x)]


ARGUMENTS: dict[str, Callable] = {
    "stack-to-cat": lambda x: [(x, torch.roll(x, 1))],
    "where-negated-condition": lambda x: [(x, torch.roll(x, 1))],
    "where-to-masked-fill-sum": _condition_and_branches,
    "setitem-tensor-to-copy": _write_column,
    "add-to-inplace-on-clone": _two_like,
    "mul-to-inplace-on-clone": _two_like,
    "inplace-add-to-copy": _two_like,
    "matmul-distribute-integer": _matrices,
    "matmul-distribute": _matrices,
    "mul-distribute-integer": _same_shape_triples,
    "matmul-method-to-function": _transposed_pair,
}

# What an unsafe rule may change, per its description: "raises" (one side raises, the other
# does not), "strides" (output strides), "values" (floating values, NaN positions).
ALLOWED = {
    "stack-to-cat": {"strides"},
    "where-to-masked-fill-sum": {"strides", "values"},
    "setitem-tensor-to-copy": {"raises"},
    "inplace-add-to-copy": {"raises"},
    "mul-to-inplace-on-clone": {"values"},
    "matmul-distribute": {"values", "raises", "exception type"},
    "interpolate-scale-to-size": {"values", "exception type"},
}
# Safe rules that differ only where the original raises, as documented: view → reshape
# runs there; interpolate's size form raises another exception type there.
WHERE_ORIGINAL_RAISES = {"view-to-reshape": {"raises"},
                         "interpolate-integer-scale-to-size": {"exception type"}}


# ---- running and comparing ---------------------------------------------------------------


def rewritten(rule_id: str, source: str) -> str:
    return rewrite_source(source, [RULES[rule_id]], RewriteOptions(unsafe=True)).text


def load(source: str) -> Callable:
    namespace: dict = {}
    exec(compile(source, "<example>", "exec"), namespace)  # noqa: S102
    return namespace["f"]


def call(function: Callable, arguments: tuple):
    """``(result, arguments afterwards, exception type)`` on fresh copies of ``arguments``."""
    fresh = tuple(_copy(a) for a in arguments)
    try:
        return function(*fresh), fresh, None
    except Exception as error:  # noqa: BLE001 - raising is an outcome compared like a value
        return None, fresh, type(error)


def _copy(value):
    if not isinstance(value, torch.Tensor):
        return value
    copy = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype)
    if value.numel() and _overlapping(value):
        base = value.as_strided((value.untyped_storage().nbytes() // value.element_size(),),
                                (1,), 0).clone()
        return base.as_strided(value.shape, value.stride(), value.storage_offset())
    copy.copy_(value)
    return copy


def _overlapping(value: torch.Tensor) -> bool:
    return 0 in value.stride() and value.numel() > 1


def differences(before, after) -> set[str]:
    """How two outcomes differ: raises, dtype, shape, strides, values, aliasing."""
    (result_a, args_a, error_a), (result_b, args_b, error_b) = before, after
    if error_a or error_b:
        if error_a and error_b:
            return set() if error_a == error_b else {"exception type"}
        return {"raises"}
    found = _differences(result_a, result_b)
    for left, right in zip(args_a, args_b):
        found |= {f"input {kind}" for kind in _differences(left, right)}
    if _aliases(result_a, args_a) != _aliases(result_b, args_b):
        found.add("aliasing")
    return found


# The oracle's bitwise comparison, its kinds of difference named as ALLOWED names them. NaN
# payloads are not part of the contract (NaNs compare by position and sign bit only).
_KINDS = {"type": "type", "structure": "shape", "shape": "shape", "dtype": "dtype",
          "stride": "strides", "nan_payload": None}
EXACT = CompareOptions(bitwise=True)


def _differences(left, right) -> set[str]:
    found = {_KINDS.get(d.kind, "values") for d in compare(left, right, EXACT)}
    return found - {None}


def _aliases(result, arguments) -> tuple[bool, ...]:
    tensors = [t for t in (result if isinstance(result, tuple | list) else (result,))
               if isinstance(t, torch.Tensor)]
    storages = {a.untyped_storage().data_ptr() for a in arguments
                if isinstance(a, torch.Tensor) and a.numel()}
    return tuple(t.numel() > 0 and t.untyped_storage().data_ptr() in storages for t in tensors)


# ---- the cases -------------------------------------------------------------------------------


def _examples() -> list[tuple[str, int, str]]:
    return [(rule.id, number, example.before) for rule in PACK.rules
            for number, example in enumerate(rule.examples) if example.after is not None]


def _round_trip_sources() -> list[tuple[str, str]]:
    """One snippet per function the round-trip kind rewrites (its list is part of the pack)."""
    sources = []
    for qualname in sorted(FUNCTIONS):
        spelled = qualname.replace("torch.nn.functional.", "F.")
        sources.append((spelled, "import torch\nimport torch.nn.functional as F\n"
                                 f"def f(x: torch.Tensor):\n    return {spelled}(x)\n"))
    return sources


def _cases(rule_id: str) -> list[tuple[str, tuple]]:
    arguments = ARGUMENTS.get(rule_id, _one)
    return [(f"{label}#{n}", args) for label, x in battery()
            for n, args in enumerate(arguments(x))]


def check_rule(rule_id: str, source: str) -> None:
    """Run original and rewritten ``f`` on every case; assert the rule's contract."""
    after = rewritten(rule_id, source)
    assert after != source, f"{rule_id} did not rewrite its own example"
    original, rewrite = load(source), load(after)
    allowed = ALLOWED.get(rule_id, set())
    problems = []
    for label, arguments in _cases(rule_id):
        before = call(original, arguments)
        found = differences(before, call(rewrite, arguments)) - allowed
        if before[2] is not None:
            found -= WHERE_ORIGINAL_RAISES.get(rule_id, set())
        if found:
            problems.append(f"{label}: {sorted(found)}")
    assert problems == [], f"{rule_id}:\n{after}\n" + "\n".join(problems[:12])


@pytest.mark.parametrize("rule_id, number, source", _examples(),
                         ids=[f"{r}-{n}" for r, n, _ in _examples()])
def test_rule_examples_hold_on_random_tensors(rule_id, number, source):
    check_rule(rule_id, source)


@pytest.mark.parametrize("function, source", _round_trip_sources(),
                         ids=[f for f, _ in _round_trip_sources()])
def test_every_round_trip_function_is_exact(function, source):
    check_rule("pointwise-transpose-round-trip", source)


def test_every_rule_has_a_property_case():
    tested = {rule_id for rule_id, _, _ in _examples()}
    assert tested == set(RULES)
    assert set(ARGUMENTS) | set(ALLOWED) <= set(RULES)
    assert {r.id for r in PACK.rules if r.safety == "unsafe"} == set(ALLOWED)


# ---- unsafe labels are justified ----------------------------------------------------------

def _overlapping_views(function: Callable):
    """Call with y a view of x shifted by one element (they overlap partially)."""
    base = torch.arange(5.0)
    x, y = base[:4], base[1:]
    try:
        return function(x, y), (x, y), None
    except Exception as error:  # noqa: BLE001
        return None, (x, y), type(error)


def _with(*arguments):
    return lambda function: call(function, arguments)


WITNESSES = {
    # channels-last inputs: stack keeps the memory format, the cat does not
    "stack-to-cat": ("strides", _with(
        *(torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last),) * 2)),
    # bfloat16 arithmetic turns -NaN into +NaN
    "where-to-masked-fill-sum": ("values", _with(
        torch.tensor([True]), torch.tensor([-1], dtype=torch.int16).view(torch.bfloat16),
        torch.zeros(1, dtype=torch.bfloat16))),
    # NaN * -NaN on an expanded operand: the kernels pick different operands' NaN
    "mul-to-inplace-on-clone": ("values", _with(
        torch.tensor([[float("nan")]], dtype=torch.float64).expand(2, 4),
        torch.full((2, 4), -float("nan"), dtype=torch.float64))),
    # setitem strips the value's leading size-1 dimension, copy_ does not
    "setitem-tensor-to-copy": ("raises", _with(torch.zeros(3, 2), torch.ones(1, 3))),
    # y overlaps x partially: add_ refuses, the copy does not
    "inplace-add-to-copy": ("raises", _overlapping_views),
    # a + b rounds before the product
    "matmul-distribute": ("values", _with(*torch.randn(
        3, 4, 4, generator=torch.Generator().manual_seed(0)).unbind())),
    # 3 * 1.5 = 4.5: size 4, sampled with 3/4 instead of 1/1.5
    "interpolate-scale-to-size": ("values", _with(torch.arange(3.0).reshape(1, 1, 3))),
}


@pytest.mark.parametrize("rule_id", sorted(WITNESSES))
def test_unsafe_rules_show_their_documented_difference(rule_id):
    kind, run = WITNESSES[rule_id]
    source = RULES[rule_id].examples[0].before
    original, rewrite = load(source), load(rewritten(rule_id, source))
    assert kind in differences(run(original), run(rewrite))


# ---- the pack as a whole ---------------------------------------------------------------


def test_whole_pack_reaches_a_fixed_point_on_generated_programs():
    rules = select_rules(PACK.rules, RewriteOptions(unsafe=True))
    fired = set()
    for seed in range(120):
        source = generate(seed).source
        try:
            result = rewrite_source(source, rules, RewriteOptions(unsafe=True))
        except RewriteError as error:  # not converging would be a pack bug
            pytest.fail(f"seed {seed}: {error}")
        ast.parse(result.text)
        assert rewrite_source(result.text, rules, RewriteOptions(unsafe=True)).text == result.text
        fired |= {edit.rule.id for _, edit in result.edits}
    assert len(fired) >= 12, sorted(fired)


@pytest.mark.parametrize("seed", range(40))
def test_safe_rules_keep_generated_programs_eagerly_identical(seed):
    from eqrewrite.oracle.generate.execute import _run

    program = generate(seed)
    safe = select_rules(PACK.rules, RewriteOptions())
    after = rewrite_source(program.source, safe, RewriteOptions()).text
    if after == program.source:
        return
    first, second = _run(program.source, program.target), _run(after, program.target)
    assert not isinstance(second, str), second
    assert compare(first, second, CompareOptions(strict=True), path="run") == []


def test_battery_covers_boundary_values_and_layouts():
    tensors = dict(battery())
    floats = torch.cat([t.reshape(-1).float() for n, t in tensors.items()
                        if n.startswith("float32")])
    assert floats.isnan().any() and floats.isinf().any()
    assert (torch.signbit(floats) & (floats == 0)).any()
    assert any(t.numel() == 0 for t in tensors.values())
    assert any(not t.is_contiguous() for t in tensors.values())
    assert {dtype_name(d) for d in DTYPES} == {n.split("-")[0] for n in tensors}
    assert list(itertools.islice(tensors, 1)) == ["float32-contiguous"]


def test_the_round_trip_keeps_the_strides_view_dtype_reads():
    """A campaign found the round trip changing the stride of a size-1 last dimension
    (channels-last, one channel, width 1): ``is_contiguous`` ignores it, ``view(dtype)`` does
    not (it needs ``stride(-1) == 1``). The rewritten code must view like the original."""
    source = ("import torch\nimport torch.nn.functional as F\n"
              "def f(x: torch.Tensor):\n    return F.silu(x).view(torch.int16)\n")
    after = rewritten("pointwise-transpose-round-trip", source)
    assert after != source
    original, rewrite = load(source), load(after)
    for shape in ((4, 1, 3, 1), (2, 3, 4, 1), (2, 3, 1, 5), (2, 3, 4, 5)):
        x = torch.randn(shape).contiguous(memory_format=torch.channels_last)
        assert differences(call(original, (x,)), call(rewrite, (x.clone(),))) == set(), shape
