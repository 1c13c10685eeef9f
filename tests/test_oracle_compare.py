"""oracle.compare: tensors (NaN, inf, signs, dtypes), nested structures, tolerances, helpers."""

from __future__ import annotations

import math
import sys
import warnings
from collections import OrderedDict, namedtuple
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")

from eqrewrite.oracle.judging.compare import (  # noqa: E402 - torch must be importable first
    DEFAULT_TOLERANCES,
    CompareOptions,
    Tolerance,
    compare,
    max_errors,
)
from eqrewrite.oracle.judging.nested import cast_floating, materialize  # noqa: E402

NAN, INF = float("nan"), float("inf")
STRICT = CompareOptions(strict=True)


def kinds(differences) -> list[str]:
    return [d.kind for d in differences]


def perturbed(tensor: torch.Tensor, index, delta: float) -> torch.Tensor:
    """A copy of ``tensor`` with ``delta`` added at ``index``."""
    copy = tensor.clone()
    copy[index] += delta
    return copy


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------------------------
# Tensor values
# ---------------------------------------------------------------------------------------------


def test_equal_tensors_have_no_differences(x):
    assert compare(x, x.clone()) == []


def test_one_perturbed_element_is_a_value_difference_with_its_error(x):
    y = perturbed(x, (1, 2), 1e-3)
    [difference] = compare(x, y)
    assert difference.kind == "value"
    assert difference.path == "output"
    expected_abs = abs(y[1, 2].item() - x[1, 2].item())
    assert difference.max_abs == pytest.approx(expected_abs, rel=1e-12)
    assert difference.max_abs == pytest.approx(1e-3, rel=1e-3)
    assert difference.max_rel == pytest.approx(expected_abs / abs(x[1, 2].item()), rel=1e-9)
    assert "1 of 12" in difference.message and "(1, 2)" in difference.message


def test_noise_within_tolerance_is_accepted(x):
    noisy = x * (1 + 1e-7) + 1e-7
    assert not torch.equal(noisy, x)
    assert compare(x, noisy) == []


def test_nan_in_different_positions_is_a_nan_difference():
    [difference] = compare(torch.tensor([NAN, 1.0, 2.0]), torch.tensor([1.0, NAN, 2.0]))
    assert difference.kind == "nan"
    assert "2 of 3" in difference.message and "(0,)" in difference.message


def test_nan_in_the_same_positions_is_equal():
    assert compare(torch.tensor([NAN, 1.0]), torch.tensor([NAN, 1.0])) == []


def test_nan_against_a_finite_value_is_not_hidden_by_tolerance():
    loose = CompareOptions(scale=1e9)
    assert kinds(compare(torch.tensor([NAN]), torch.tensor([0.0]), loose)) == ["nan"]


def test_infinities_of_opposite_sign_are_an_inf_difference():
    [difference] = compare(torch.tensor([INF, 1.0]), torch.tensor([-INF, 1.0]))
    assert difference.kind == "inf"
    assert "expected inf, got -inf" in difference.message


def test_infinity_against_a_large_finite_value_is_an_inf_difference():
    big = torch.finfo(torch.float32).max
    assert kinds(compare(torch.tensor([INF]), torch.tensor([big]))) == ["inf"]
    assert compare(torch.tensor([-INF, INF]), torch.tensor([-INF, INF])) == []


def test_nan_inf_and_value_differences_are_all_reported():
    expected = torch.tensor([NAN, INF, 1.0, 5.0])
    actual = torch.tensor([0.0, -INF, 1.0, 6.0])
    assert kinds(compare(expected, actual)) == ["nan", "inf", "value"]


def test_dtype_mismatch_with_equal_values_is_a_dtype_difference(x):
    [difference] = compare(x, x.double())
    assert difference.kind == "dtype"
    assert "torch.float32" in difference.message and "torch.float64" in difference.message


def test_shape_mismatch_is_reported_and_values_are_not_compared(x):
    assert kinds(compare(x, x.reshape(4, 3))) == ["shape"]
    assert kinds(compare(x, torch.zeros(2, dtype=torch.int64))) == ["shape", "dtype"]


def test_device_mismatch_is_reported():
    assert kinds(compare(torch.empty(2, device="meta"), torch.empty(2))) == ["device"]
    assert compare(torch.empty(2, device="meta"), torch.empty(2, device="meta")) == []


def test_strides_are_not_compared(x):
    transposed = x.t().contiguous().t()
    assert transposed.stride() != x.stride()
    assert compare(x, transposed) == []


def test_integer_tensors_compare_exactly():
    big = torch.tensor([2**40, 7])
    [difference] = compare(big, big + torch.tensor([1, 0]))
    assert difference.kind == "exact" and not difference.floating
    assert difference.max_abs == 1.0
    assert compare(big, big.clone(), CompareOptions(scale=1e6)) == []


def test_bool_tensors_compare_exactly():
    expected = torch.tensor([True, False, True])
    assert compare(expected, expected.clone()) == []
    [difference] = compare(expected, torch.tensor([True, True, True]))
    assert difference.kind == "exact" and not difference.floating
    assert "expected False, got True" in difference.message


def test_signed_zero_only_matters_in_strict_mode():
    negative, positive = torch.tensor([-0.0, 1.0]), torch.tensor([0.0, 1.0])
    assert compare(negative, positive) == []
    [difference] = compare(negative, positive, STRICT)
    assert difference.kind == "signed_zero"
    assert "expected -0, got 0" in difference.message


def test_nan_sign_bit_only_matters_in_strict_mode():
    positive = torch.tensor(NAN)
    negative = -torch.tensor(NAN)
    assert torch.signbit(negative) and not torch.signbit(positive)
    assert compare(positive, negative) == []
    assert kinds(compare(positive, negative, STRICT)) == ["nan_sign"]
    assert compare(negative, negative.clone(), STRICT) == []


def test_complex_tensors_compare_real_and_imaginary_parts():
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    assert compare(z, z.clone()) == []
    [difference] = compare(z, z + 1e-2j)
    assert difference.kind == "value"
    assert "imag" in difference.message
    assert difference.max_abs == pytest.approx(1e-2, rel=1e-4)
    assert kinds(compare(z, torch.complex(z.real, torch.full((2,), NAN)))) == ["nan"]


def test_lazily_conjugated_complex_tensors_are_compared_by_value():
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    assert z.conj().is_conj()
    assert compare(z.conj(), torch.tensor([1 - 2j, 3 + 4j], dtype=torch.complex64)) == []
    assert kinds(compare(z.conj(), z)) == ["value"]


def test_tensors_requiring_grad_are_compared_detached(x):
    leaf = x.clone().requires_grad_()
    assert compare(leaf, x) == []
    assert kinds(compare(leaf * 2, leaf * 3)) == ["value"]


def test_sparse_tensors_compare_densely_and_layouts_must_match():
    sparse = torch.eye(3).to_sparse()
    assert compare(sparse, torch.eye(3).to_sparse()) == []
    assert kinds(compare(sparse, (torch.eye(3) * 2).to_sparse())) == ["value"]
    assert kinds(compare(sparse, torch.eye(3))) == ["layout"]


def test_quantized_tensors_compare_dequantized_values():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantize_per_tensor is deprecated but still produced
        q = torch.quantize_per_tensor(torch.tensor([0.1, 0.5]), 0.1, 0, torch.qint8)
        other = torch.quantize_per_tensor(torch.tensor([0.1, 0.7]), 0.1, 0, torch.qint8)
    assert compare(q, q.clone()) == []
    [difference] = compare(q, other)
    assert difference.kind == "value"
    assert difference.max_abs == pytest.approx(0.2, rel=1e-5)


# ---------------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------------


def test_default_tolerances_follow_torch_testing():
    assert DEFAULT_TOLERANCES[torch.float32] == Tolerance(rtol=1.3e-6, atol=1e-5)
    assert DEFAULT_TOLERANCES[torch.float64] == Tolerance(rtol=1e-7, atol=1e-7)
    assert DEFAULT_TOLERANCES[torch.complex64] == DEFAULT_TOLERANCES[torch.float32]
    assert torch.int64 not in DEFAULT_TOLERANCES


def test_float16_tolerance_is_looser_than_float32():
    base = torch.tensor([1.0, 2.0, 4.0])
    off = base * (1 + 5e-4)
    assert compare(base.half(), off.half()) == []
    assert kinds(compare(base, off)) == ["value"]


def test_bfloat16_tolerance_is_looser_than_float16():
    base = torch.tensor([1.0, 2.0, 4.0])
    off = base * (1 + 1e-2)
    assert compare(base.bfloat16(), off.bfloat16()) == []
    assert kinds(compare(base.half(), off.half())) == ["value"]


def test_scale_multiplies_every_tolerance(x):
    y = perturbed(x, (0, 0), 5e-5)
    assert kinds(compare(x, y)) == ["value"]
    assert compare(x, y, CompareOptions(scale=10)) == []
    assert compare(1.0, 1.0 + 5e-7, CompareOptions(scale=10)) == []
    assert kinds(compare(1.0, 1.0 + 5e-7)) == ["value"]


def test_tolerances_can_be_overridden_per_dtype(x):
    y = perturbed(x, (0, 0), 1e-3)
    loose = CompareOptions(tolerances={torch.float32: Tolerance(rtol=0.0, atol=1e-2)})
    assert compare(x, y, loose) == []
    # Dtypes left out of a custom table keep their defaults.
    assert compare(x.half(), x.half(), loose) == []
    assert CompareOptions().tolerances is not DEFAULT_TOLERANCES


def test_dtypes_without_a_tolerance_compare_exactly():
    one = torch.ones(2).to(torch.float8_e4m3fn)
    two = torch.full((2,), 2.0).to(torch.float8_e4m3fn)
    assert compare(one, one.clone()) == []
    assert kinds(compare(one, two)) == ["value"]


def test_float16_extremes_do_not_overflow_the_error():
    top = torch.tensor([65504.0], dtype=torch.float16)
    [difference] = compare(top, -top)
    assert difference.kind == "value"
    assert difference.max_abs == 2 * 65504.0


# ---------------------------------------------------------------------------------------------
# Python scalars and opaque objects
# ---------------------------------------------------------------------------------------------


def test_python_scalars_must_have_the_same_type():
    assert kinds(compare(1, 1.0)) == ["type"]
    assert kinds(compare(1, True)) == ["type"]
    assert kinds(compare(1.0, True)) == ["type"]
    assert "expected int 1, got float 1.0" in compare(1, 1.0)[0].message


def test_python_ints_and_bools_are_exact_and_floats_use_float64_tolerance():
    assert kinds(compare(3, 4)) == ["exact"]
    assert kinds(compare(True, False)) == ["exact"]
    assert compare(0.1 + 0.2, 0.3) == []
    assert compare(NAN, NAN) == []
    assert kinds(compare(NAN, 1.0)) == ["nan"]
    assert kinds(compare(INF, -INF)) == ["inf"]
    assert kinds(compare(-0.0, 0.0, STRICT)) == ["signed_zero"]
    assert kinds(compare(NAN, -NAN, STRICT)) == ["nan_sign"]
    assert kinds(compare(1 + 2j, 1 + 3j)) == ["value"]
    assert compare(1 + 2j, 1 + 3j)[0].path == "output.imag"


def test_none_strings_bytes_and_torch_metadata_objects():
    assert compare(None, None) == []
    assert kinds(compare(None, 0)) == ["type"]
    assert kinds(compare("a", "b")) == ["exact"]
    assert kinds(compare(b"a", "a")) == ["type"]
    assert compare(torch.float32, torch.float32) == []
    assert kinds(compare(torch.float32, torch.float16)) == ["exact"]
    assert kinds(compare(torch.device("cpu"), torch.device("meta"))) == ["exact"]
    assert compare(torch.Size([2, 3]), torch.Size([2, 3])) == []
    assert kinds(compare(torch.Size([2, 3]), torch.Size([3, 2]))) == ["exact"]
    assert kinds(compare(torch.Size([2, 3]), (2, 3))) == ["type"]


def test_objects_whose_equality_raises_are_a_type_difference():
    class Touchy:
        def __eq__(self, other):
            raise RuntimeError("no comparing")

    [difference] = compare(Touchy(), Touchy())
    assert difference.kind == "type"
    assert "no comparing" in difference.message


def test_numpy_arrays_compare_as_tensors():
    numpy = pytest.importorskip("numpy")
    assert compare(numpy.ones(3), numpy.ones(3)) == []
    assert kinds(compare(numpy.ones(3), numpy.zeros(3))) == ["value"]
    assert kinds(compare(numpy.ones(3), numpy.ones(3, dtype=numpy.float32))) == ["dtype"]


# ---------------------------------------------------------------------------------------------
# Structures
# ---------------------------------------------------------------------------------------------


def test_nested_containers_report_the_path(x):
    expected = (x, {"a": [1, x], "b": x})
    assert compare(expected, expected) == []
    [difference] = compare(expected, (x, {"a": [1, x], "b": x + 1}))
    assert difference.path == "output[1]['b']"
    assert difference.message.startswith("output[1]['b']: ")
    [difference] = compare(expected, (x, {"a": [1, x + 1], "b": x}))
    assert difference.path == "output[1]['a'][1]"


def test_custom_root_path(x):
    [difference] = compare({"b": x}, {"b": x + 1}, path="args[0]")
    assert difference.path == "args[0]['b']"


def test_dict_key_order_is_a_structure_difference():
    [difference] = compare({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert difference.kind == "structure"
    assert "order" in difference.message


def test_missing_keys_are_reported_and_shared_keys_still_compared():
    differences = compare({"a": 1, "b": 2}, {"a": 5, "c": 3})
    assert kinds(differences) == ["structure", "exact"]
    assert "missing keys ['b']" in differences[0].message
    assert "unexpected keys ['c']" in differences[0].message
    assert differences[1].path == "output['a']"


def test_list_length_mismatch_is_a_structure_difference():
    differences = compare([1, 2, 3], [1, 5])
    assert kinds(differences) == ["structure", "exact"]
    assert "length 3" in differences[0].message and "length 2" in differences[0].message
    assert differences[1].path == "output[1]"


def test_container_types_must_match(x):
    assert kinds(compare(x, [1.0])) == ["type"]
    assert kinds(compare([1], (1,))) == ["type"]
    assert kinds(compare({"a": 1}, OrderedDict(a=1))) == ["type"]
    assert kinds(compare({"a": [x]}, {"a": (x,)})) == ["type"]


@dataclass
class Pair:
    first: torch.Tensor
    second: list


def test_dataclasses_compare_field_by_field(x):
    assert compare(Pair(x, [1]), Pair(x.clone(), [1])) == []
    [difference] = compare(Pair(x, [1]), Pair(x, [2]))
    assert difference.path == "output.second[0]"


class ModelOutputLike(OrderedDict):
    """Mimics transformers' ModelOutput: items mirrored as attributes."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)


def model_output(logits, hidden_states) -> ModelOutputLike:
    out = ModelOutputLike()
    out["logits"] = logits
    out["hidden_states"] = hidden_states
    return out


def test_model_output_like_mappings_use_attribute_paths(x):
    expected = model_output(x, (x, x))
    assert compare(expected, model_output(x.clone(), (x, x))) == []
    [difference] = compare(expected, model_output(x, (x + 1, x)))
    assert difference.path == "output.hidden_states[0]"
    reordered = ModelOutputLike()
    reordered["hidden_states"] = (x, x)
    reordered["logits"] = x
    assert kinds(compare(expected, reordered)) == ["structure"]


def test_namedtuples_and_torch_return_types_use_field_paths(x):
    Point = namedtuple("Point", ["xs", "ys"])
    [difference] = compare(Point(x, 1), Point(x, 2))
    assert difference.path == "output.ys"
    assert compare(torch.max(x, 1), torch.max(x.clone(), 1)) == []
    y = perturbed(x, (0, 0), 100.0)
    assert "value" in kinds(compare(torch.max(x, 1), torch.max(y, 1)))


def test_mismatched_structures_never_raise(x):
    weird = [
        ({"a": [x]}, {"a": {"b": x}}),
        (Pair(x, []), (x, [])),
        ([x, None], [None, x]),
        (torch.max(x, 1), (x, x)),
    ]
    for expected, actual in weird:
        assert compare(expected, actual), (expected, actual)


# ---------------------------------------------------------------------------------------------
# materialize, max_errors, cast_floating
# ---------------------------------------------------------------------------------------------


def test_unmaterialized_generators_are_not_compared_by_identity():
    generator = (i for i in range(3))
    [difference] = compare(generator, generator)
    assert difference.kind == "type" and "materialize" in difference.message
    assert list(generator) == [0, 1, 2]  # compare did not drain it


def test_materialize_drains_generators_recursively(x):
    def rows(t):
        yield from t

    value = {"rows": rows(x), "pairs": [zip([1, 2], "ab")], "tensor": x}
    drained = materialize(value)
    assert isinstance(drained["rows"], list) and len(drained["rows"]) == 3
    assert drained["pairs"] == [[(1, "a"), (2, "b")]]
    assert drained["tensor"] is x
    again = materialize({"rows": rows(x), "pairs": [zip([1, 2], "ab")], "tensor": x})
    assert compare(drained, again) == []
    changed = materialize({"rows": rows(x + 1), "pairs": [zip([1, 2], "ab")], "tensor": x})
    assert [d.path for d in compare(drained, changed)] == [
        f"output['rows'][{i}]" for i in range(3)
    ]


def test_materialize_keeps_container_types(x):
    Point = namedtuple("Point", ["xs", "ys"])
    value = (Point(iter([1]), 2), model_output(x, iter([x])), Pair(x, iter([3])))
    point, output, pair = materialize(value)
    assert point == Point([1], 2)
    assert type(output) is ModelOutputLike and output.hidden_states == [x]
    assert type(pair) is Pair and pair.second == [3]


def test_max_errors_over_all_floating_tensors(x):
    y = perturbed(x, (2, 3), 0.5)
    max_abs, max_rel = max_errors({"a": [x, torch.arange(3)]}, {"a": [y, torch.arange(3) + 1]})
    assert max_abs == pytest.approx(0.5, rel=1e-6)
    assert max_rel == pytest.approx(0.5 / abs(x[2, 3].item()), rel=1e-5)


def test_max_errors_excludes_nan_and_inf_and_defaults_to_zero():
    expected = torch.tensor([NAN, INF, 2.0])
    actual = torch.tensor([1.0, -INF, 2.5])
    assert max_errors(expected, actual) == (0.5, 0.25)
    assert max_errors([1, "a"], [1, "a"]) == (0.0, 0.0)
    assert max_errors(torch.zeros(2), torch.zeros(2)) == (0.0, 0.0)


def test_max_errors_accepts_a_float64_reference(x):
    assert max_errors(x.double(), x) == (0.0, 0.0)
    abs_err, _ = max_errors(x.double() + 1e-3, x)
    assert abs_err == pytest.approx(1e-3, rel=1e-6)


def test_cast_floating_casts_floats_and_leaves_integers_alone(x):
    ints = torch.arange(3)
    value = {"x": x, "ints": ints, "z": torch.ones(2, dtype=torch.complex64), "n": [1.5, "s"]}
    cast = cast_floating(value, torch.float64)
    assert cast["x"].dtype == torch.float64 and torch.equal(cast["x"], x.double())
    assert cast["ints"] is ints
    assert cast["z"].dtype == torch.complex128
    assert cast["n"] == [1.5, "s"] and cast["n"] is not value["n"]
    assert x.dtype == torch.float32  # the original is untouched


def test_cast_floating_copies_even_when_the_dtype_already_matches(x):
    cast = cast_floating(x, torch.float32)
    assert cast is not x and cast.data_ptr() != x.data_ptr()


def test_cast_floating_keeps_leaves_that_require_grad(x):
    leaf = x.clone().requires_grad_()
    cast = cast_floating((leaf,), torch.float64)[0]
    assert cast.requires_grad and cast.is_leaf and cast.dtype == torch.float64


def test_cast_floating_rejects_non_floating_targets(x):
    with pytest.raises(ValueError, match="floating"):
        cast_floating(x, torch.int32)


def test_float64_reference_workflow(x):
    reference = torch.sin(cast_floating(x, torch.float64))
    result = torch.sin(x)
    abs_err, rel_err = max_errors(reference, result)
    assert 0 < abs_err < 1e-6
    assert compare(reference.float(), result) == []
    assert math.isfinite(rel_err)


def test_only_floating_differences_could_be_rounding():
    # Triage may excuse rounding; it must never see an integer, bool or Python value as such.
    assert [d.floating for d in compare(torch.tensor([1.0]), torch.tensor([2.0]))] == [True]
    assert [d.floating for d in compare(torch.tensor([1]), torch.tensor([2]))] == [False]
    assert [d.floating for d in compare(torch.tensor([True]), torch.tensor([False]))] == [False]
    assert [d.floating for d in compare(3, 4)] == [False]
    assert [d.floating for d in compare(1.0, 2.0)] == [True]
    assert [d.floating for d in compare(torch.ones(2), torch.ones(3))] == [False]


def test_differences_carry_keys_that_fetch_the_same_value_elsewhere():
    from eqrewrite.oracle.judging.nested import MISSING, fetch

    expected = {"a": [torch.zeros(2), (1, torch.ones(3))]}
    actual = {"a": [torch.zeros(2), (1, torch.full((3,), 2.0))]}
    [difference] = compare(expected, actual)
    assert difference.path == "output['a'][1][1]"
    assert torch.equal(fetch(actual, difference.keys), torch.full((3,), 2.0))
    assert fetch(expected, difference.keys + (("item", 9),)) is MISSING


# -- bitwise mode: the rule tests' standard ----------------------------------------------------

BITWISE = CompareOptions(bitwise=True)


def _nan_with_payload(payload: int) -> torch.Tensor:
    return torch.tensor([0x7FC00000 | payload], dtype=torch.int32).view(torch.float32)


def test_bitwise_sees_what_the_default_excuses():
    close = (torch.tensor([1.0]), torch.tensor([1.0 + 1e-7]))
    assert compare(*close) == [] and kinds(compare(*close, BITWISE)) == ["value"]
    zeros = (torch.tensor([0.0]), torch.tensor([-0.0]))
    assert compare(*zeros) == [] and kinds(compare(*zeros, BITWISE)) == ["signed_zero"]
    assert kinds(compare(0.0, -0.0, BITWISE)) == ["signed_zero"]


def test_bitwise_compares_nan_payloads_that_strict_mode_ignores():
    quiet, other = _nan_with_payload(0), _nan_with_payload(5)
    assert compare(quiet, other, STRICT) == []
    assert kinds(compare(quiet, other, BITWISE)) == ["nan_payload"]
    assert compare(quiet, quiet.clone(), BITWISE) == []
    as_float = float(quiet.double()), float(other.double())
    assert kinds(compare(*as_float, BITWISE)) == ["nan_payload"]


def test_bitwise_compares_strides_and_requires_grad():
    x = torch.ones(2, 3)
    assert compare(x, x.t().contiguous().t()) == []
    assert kinds(compare(x, x.t().contiguous().t(), BITWISE)) == ["stride"]
    assert compare(x.unsqueeze(0), x.unsqueeze(0).as_strided((1, 2, 3), (99, 3, 1)),
                   BITWISE) == []  # the stride of a size-1 dimension means nothing
    assert kinds(compare(x, x.clone().requires_grad_(), BITWISE)) == ["exact"]


def test_bitwise_compares_subclass_values_as_plain_tensors():
    class Odd(torch.Tensor):
        def __sub__(self, other):
            return "not a tensor"

    same = compare(torch.ones(2).as_subclass(Odd), torch.ones(2).as_subclass(Odd), BITWISE)
    assert same == []
    assert kinds(compare(torch.ones(2).as_subclass(Odd), torch.ones(2), BITWISE)) == ["type"]


# -- the reproducers' copy is this comparison ----------------------------------------------


def test_a_reproducer_vendors_the_oracle_core_verbatim_and_self_contained(tmp_path):
    """Reproducers judge with a copy of compare.py and the rest of the core: the copy is
    byte for byte the source, and its modules import nothing of eqrewrite beyond the copy
    when loaded (imports inside functions serve the oracle's other runs, such as the
    audit's probes in worker.py, which a reproducer never makes)."""
    import ast
    from pathlib import Path

    from eqrewrite.oracle.formats import VENDORED
    from eqrewrite.oracle.harness.repro import write_reproducer
    from eqrewrite.oracle.judging import compare as source
    from eqrewrite.oracle.judging.protocol import RunRequest, Variant
    from eqrewrite.oracle.judging.settings import CompileSettings, Target, TargetForm

    request = RunRequest(Target("m.py::f", "f", TargetForm.FUNCTION, Path("m.py")),
                         CompileSettings(), Variant.EAGER)
    script = write_reproducer(tmp_path, tmp_path, request, BITWISE)
    package = script.parent / "_eqrewrite_oracle"
    here = Path(source.__file__).parent
    assert "compare" in VENDORED
    for name in VENDORED:
        copied = (package / f"{name}.py").read_bytes()
        assert copied == (here / f"{name}.py").read_bytes(), name
        for node in ast.parse(copied).body:
            if isinstance(node, ast.ImportFrom) and node.level:
                imported = [node.module] if node.module else [a.name for a in node.names]
                assert set(imported) <= set(VENDORED), (name, imported)
            elif isinstance(node, ast.ImportFrom | ast.Import):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else [
                    a.name for a in node.names]
                assert not any(m.startswith("eqrewrite") for m in modules), (name, modules)


def test_printed_tensors_compare_without_autograd_node_names():
    from eqrewrite.oracle.judging.observe import Printed

    def printed(value):
        with Printed() as capture:
            print("step", value)
        return capture.observed()["stdout"]

    leaf = torch.ones(2, requires_grad=True)
    summed, cloned = printed(leaf.sum()), printed(leaf.sum().clone())
    assert "SumBackward0" not in summed and summed == cloned  # a deferred print's snapshot
    assert printed(leaf.sum().detach()) != summed  # losing the grad_fn still shows


def test_what_the_compiler_writes_to_stderr_is_not_the_programs_output():
    """Inductor writes autotuning statistics to ``sys.stderr`` itself under
    ``max_autotune`` (only in the compiled run): a campaign flagged that as a behaviour
    difference. Writes made by torch.compile's code are diagnostics; the program's stay."""
    from pathlib import Path

    from eqrewrite.oracle.judging.observe import Printed

    inductor = Path(torch.__file__).parent / "_inductor" / "select_algorithm.py"
    stats = compile('import sys\nsys.stderr.write("Autotune Choices Stats:\\n{}\\n")\n',
                    str(inductor), "exec")
    with Printed() as capture:
        exec(stats, {})
        print("the program's own line", file=sys.stderr)
    assert capture.observed()["stderr"] == "the program's own line\n"
    assert capture.diagnostics == ["Autotune Choices Stats:\n{}\n"]


def test_an_output_autograd_refuses_to_use_is_the_programs_backward_error():
    """A view returned by ``unbind`` whose base was then modified in place cannot even be
    multiplied in grad mode: the gradient step records that as the backward's error (it
    used to raise out of the oracle and turn a valid program into an "eager crash")."""
    from eqrewrite.oracle.judging.observe import gradients

    x = torch.randn(3, 4, requires_grad=True)
    base = x.sin()
    _, second, _ = base.unbind(0)
    base.mul_(2)
    grads = gradients((second,), None, [x])
    assert grads is not None and set(grads) == {"backward_error"}
    assert "modified inplace" in grads["backward_error"]
    fine = gradients((x.sin().sum(0),), None, [x])
    assert fine is not None and set(fine) == {"input0"}
