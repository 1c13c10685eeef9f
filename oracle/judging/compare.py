"""Structured comparison of two runs' results: original vs rewritten, eager vs compiled.

One concern: how two values differ, for every kind of value a run can return (tensors
element by element with their metadata, Python scalars, containers, opaque objects), each
discrepancy described for a maintainer. The rest of what the judging does with nested values
(draining, casting, reaching a part by a difference's keys) is ``nested.py``.

``allclose`` alone misses most real miscompilations: they hide in NaN and infinity positions,
the sign of zero, the sign bit of NaN, the result dtype, and Python-visible state such as dict
key order or the type of a container. ``compare`` walks two nested values in parallel and returns
every such discrepancy as a ``Difference`` (an empty list means "equivalent"); it never raises
on mismatched or unusual inputs, because a crash in the oracle would hide the very bug it hunts.

It is the one comparison of the project: the oracle judges runs with it, reproducers carry a
copy of this file, and the rule tests call it with ``CompareOptions(bitwise=True)``, the standard a
rewrite must meet (bits, strides, ``requires_grad``).
"""

from __future__ import annotations

import dataclasses
import math
import struct
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from .nested import MISSING, tensor_pairs


@dataclass(frozen=True)
class Tolerance:
    """Allowed error of a finite value: ``|actual - expected| <= atol + rtol * |expected|``."""

    rtol: float
    atol: float


def _default_tolerances() -> dict[torch.dtype, Tolerance]:
    """torch.testing's defaults for real dtypes; a complex dtype gets its real part's."""
    real = {
        torch.float64: Tolerance(rtol=1e-7, atol=1e-7),
        torch.float32: Tolerance(rtol=1.3e-6, atol=1e-5),
        torch.float16: Tolerance(rtol=1e-3, atol=1e-5),
        torch.bfloat16: Tolerance(rtol=1.6e-2, atol=1e-5),
    }
    complex_parts = {
        torch.complex128: torch.float64,
        torch.complex64: torch.float32,
        torch.complex32: torch.float16,
    }
    return real | {dtype: real[part] for dtype, part in complex_parts.items()}


# Integer and bool tensors have no entry: they are always compared exactly. A floating dtype
# without an entry (the float8 family) is also compared exactly, which can only over-report.
DEFAULT_TOLERANCES: dict[torch.dtype, Tolerance] = _default_tolerances()

_EXACT = Tolerance(rtol=0.0, atol=0.0)

# Digits that round-trip each dtype, so a printed value shows what the tensor really holds.
_DIGITS = {torch.float16: 5, torch.bfloat16: 4, torch.float32: 9, torch.float64: 17}


@dataclass
class CompareOptions:
    """How strictly ``compare`` judges two values."""

    tolerances: dict[torch.dtype, Tolerance] = field(
        default_factory=lambda: dict(DEFAULT_TOLERANCES)
    )
    scale: float = 1.0
    strict: bool = False
    # Bit for bit, what a rewrite must preserve: no tolerance, signs of zero and NaN, NaN
    # payloads (kind ``nan_payload``), strides (``stride``) and ``requires_grad`` (``exact``).
    # Implies ``strict``.
    bitwise: bool = False

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        """Scaled tolerance for ``dtype``; a dtype missing from ``tolerances`` uses the default."""
        if self.bitwise:
            return _EXACT
        base = self.tolerances.get(dtype, DEFAULT_TOLERANCES.get(dtype, _EXACT))
        return Tolerance(rtol=base.rtol * self.scale, atol=base.atol * self.scale)


class Path(str):
    """Where a value sits, shown as text (``result.output[0]``); ``keys`` are the steps that
    reach it from the root, ``("item", 0)``, ``("key", "logits")`` or ``("attr", "mean")``,
    so that the same value can be fetched from another run's result (``fetch``)."""

    keys: tuple[tuple[str, Any], ...]

    def __new__(cls, text: str, keys: tuple[tuple[str, Any], ...] = ()) -> Path:
        made = super().__new__(cls, text)
        made.keys = keys
        return made

    def __reduce__(self) -> tuple[type[Path], tuple[str, tuple[tuple[str, Any], ...]]]:
        return Path, (str(self), self.keys)

    def child(self, suffix: str, step: tuple[str, Any]) -> Path:
        """The location one step further in."""
        return Path(str(self) + suffix, (*self.keys, step))


# What kind of discrepancy a Difference is. Only FLOATING ones may be rounding: the value of a
# floating element (or Python float), and where NaN, infinity or the sign of zero and NaN
# appear. Everything else (exact dtypes, Python values, metadata, structure) is never noise.
# ``nan_payload`` (bitwise mode only, never met by the judge) is not among them.
FLOATING_KINDS = frozenset({"value", "nan", "inf", "signed_zero", "nan_sign"})


@dataclass
class Difference:
    """One discrepancy between the expected and the actual value.

    ``kind`` is one of: ``value`` (a floating value beyond tolerance), ``nan``, ``inf``,
    ``signed_zero``, ``nan_sign`` (floating specials), ``nan_payload`` (bitwise only),
    ``exact`` (an integer, bool or other
    exactly compared value), ``shape``, ``dtype``, ``device``, ``layout``, ``stride``,
    ``type``, ``structure``.
    """

    path: str
    kind: str
    message: str
    max_abs: float | None = None
    max_rel: float | None = None
    keys: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.path, Path):
            self.keys = self.keys or self.path.keys
            self.path = str(self.path)

    @property
    def floating(self) -> bool:
        """Could rounding explain it? Only for floating values and specials."""
        return self.kind in FLOATING_KINDS


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def compare(
    expected: Any, actual: Any, options: CompareOptions | None = None, path: str = "output"
) -> list[Difference]:
    """Every difference between ``expected`` and ``actual``; ``[]`` when they are equivalent."""
    return _compare(expected, actual, options or CompareOptions(), Path(path))


def stride_differences(expected: Any, actual: Any, path: str = "output") -> list[Difference]:
    """Tensors at the same place with the same shape but other strides (dimensions of size 1
    aside, whose stride means nothing). Compiled code promises eager's output strides: a
    caller's ``.view()`` depends on them."""
    differences = []
    for index, (exp, act) in enumerate(tensor_pairs(expected, actual)):
        if exp.layout != torch.strided or exp.is_nested or exp.shape != act.shape or (
                exp.numel() <= 1 or act.layout != torch.strided or act.is_nested):
            continue
        sized = [d for d, size in enumerate(exp.shape) if size > 1]
        left, right = [exp.stride(d) for d in sized], [act.stride(d) for d in sized]
        if left != right:
            message = (f"{path}: tensor {index} (shape {list(exp.shape)}) has strides "
                       f"{list(act.stride())}, expected {list(exp.stride())}")
            differences.append(Difference(path, "stride", message))
    return differences


def max_errors(expected: Any, actual: Any) -> tuple[float, float]:
    """Largest absolute and relative error over all floating tensors, NaN/inf excluded."""
    max_abs = max_rel = 0.0
    for exp, act in tensor_pairs(expected, actual):
        pair = _floating_pair(exp, act)
        if pair is None:
            continue
        exp64, act64 = pair
        abs_err, rel_err = _errors(exp64, act64, _tiny(exp.dtype))
        max_abs = max(max_abs, abs_err.max().item())
        max_rel = max(max_rel, rel_err.max().item())
    return max_abs, max_rel


# --------------------------------------------------------------------------------------------
# Dispatch over kinds of values
# --------------------------------------------------------------------------------------------


def _compare(expected: Any, actual: Any, options: CompareOptions, path: Path) -> list[Difference]:
    """``compare`` for one node, turning any unexpected error into a "type" difference."""
    try:
        return _dispatch(expected, actual, options, path)
    except Exception as error:  # the oracle must report, not crash, on exotic values
        message = (
            f"{path}: could not compare {_describe(expected)} with {_describe(actual)}: "
            f"{type(error).__name__}: {error}"
        )
        return [Difference(path, "type", message)]


def _dispatch(expected: Any, actual: Any, options: CompareOptions, path: Path) -> list[Difference]:
    """Pick the comparison for the kind of ``expected`` once both have the same exact type."""
    # Exact types: list vs tuple, 1 vs 1.0 vs True, dict vs OrderedDict are all visible to users.
    if type(expected) is not type(actual):
        return [_type_difference(expected, actual, path)]
    if isinstance(expected, torch.Tensor):
        return _compare_tensors(expected, actual, options, path)
    if type(expected) in (bool, int):
        return _compare_ints(expected, actual, path)
    if type(expected) is float:
        return _compare_floats(expected, actual, options, path)
    if type(expected) is complex:
        return _compare_floats(
            expected.real, actual.real, options, path.child(".real", ("attr", "real"))
        ) + _compare_floats(
            expected.imag, actual.imag, options, path.child(".imag", ("attr", "imag"))
        )
    if _is_numpy(expected):
        return _compare_numpy(expected, actual, options, path)
    if isinstance(expected, torch.Size):
        return _compare_by_equality(expected, actual, path)
    if isinstance(expected, tuple) and hasattr(expected, "_fields"):  # a named tuple
        return _compare_fields(expected, actual, expected._fields, options, path)
    if isinstance(expected, (list, tuple)):
        return _compare_sequences(expected, actual, options, path)
    if isinstance(expected, Mapping):
        return _compare_mappings(expected, actual, options, path)
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        names = [f.name for f in dataclasses.fields(expected)]
        return _compare_fields(expected, actual, names, options, path)
    if isinstance(expected, Iterator):
        # Iterators compare by identity and draining them here would mutate the caller's values.
        name = _type_name(expected)
        message = f"{path}: cannot compare unmaterialized {name}; call materialize() first"
        return [Difference(path, "type", message)]
    return _compare_by_equality(expected, actual, path)


def _compare_by_equality(expected: Any, actual: Any, path: Path) -> list[Difference]:
    """Compare opaque objects with ``==``; an ``==`` that raises is a "type" difference."""
    try:
        equal = bool(expected == actual)
    except Exception as error:
        message = (
            f"{path}: cannot compare {_type_name(expected)} objects with ==: "
            f"{type(error).__name__}: {error}"
        )
        return [Difference(path, "type", message)]
    if equal:
        return []
    message = f"{path}: expected {_short_repr(expected)}, got {_short_repr(actual)}"
    return [Difference(path, "exact", message)]


def _compare_ints(expected: int, actual: int, path: Path) -> list[Difference]:
    """Python ints and bools compare exactly."""
    if expected == actual:
        return []
    error = _safe_float(abs(actual - expected))
    message = f"{path}: expected {_short_repr(expected)}, got {_short_repr(actual)}"
    return [Difference(path, "exact", message, max_abs=error, max_rel=_relative(error, expected))]


def _compare_floats(
    expected: float, actual: float, options: CompareOptions, path: Path
) -> list[Difference]:
    """Python floats compare like float64 tensor elements: NaN equals NaN, infinities exactly."""
    shown = f"expected {expected!r}, got {actual!r}"
    if math.isnan(expected) or math.isnan(actual):
        if not (math.isnan(expected) and math.isnan(actual)):
            return [Difference(path, "nan", f"{path}: {shown}")]
        if (options.strict or options.bitwise) and _sign(expected) != _sign(actual):
            message = (
                f"{path}: NaN sign bit differs: expected {_sign_name(expected)}, "
                f"got {_sign_name(actual)}"
            )
            return [Difference(path, "nan_sign", message)]
        if options.bitwise and struct.pack("<d", expected) != struct.pack("<d", actual):
            return [Difference(path, "nan_payload", f"{path}: NaN payload bits differ")]
        return []
    if math.isinf(expected) or math.isinf(actual):
        return [] if expected == actual else [Difference(path, "inf", f"{path}: {shown}")]
    tolerance = options.tolerance(torch.float64)
    error = abs(actual - expected)
    if error > tolerance.atol + tolerance.rtol * abs(expected):
        message = f"{path}: {shown} (beyond {_tolerance_text(tolerance)})"
        return [Difference(path, "value", message, error, _relative(error, expected))]
    if (options.strict or options.bitwise) and expected == 0 and actual == 0 and (
            _sign(expected) != _sign(actual)):
        return [Difference(path, "signed_zero", f"{path}: {shown}")]
    return []


def _compare_numpy(expected: Any, actual: Any, options: CompareOptions,
                   path: Path) -> list[Difference]:
    """Compare numpy arrays and scalars as tensors, whose ``==`` is not a single bool."""
    import numpy  # only reachable when a value already is a numpy object

    try:
        pair = torch.as_tensor(numpy.array(expected)), torch.as_tensor(numpy.array(actual))
    except (TypeError, ValueError, RuntimeError):
        # Object, string and datetime arrays have no tensor form; scalars still compare with ==.
        return _compare_by_equality(expected, actual, path)
    return _compare_tensors(*pair, options, path)


def _compare_sequences(
    expected: list[Any] | tuple[Any, ...], actual: list[Any] | tuple[Any, ...],
    options: CompareOptions, path: Path
) -> list[Difference]:
    """Lists and tuples: same length, then item by item (the common prefix when lengths differ)."""
    differences = []
    if len(expected) != len(actual):
        message = (
            f"{path}: expected {_type_name(expected)} of length {len(expected)}, "
            f"got length {len(actual)}"
        )
        differences.append(Difference(path, "structure", message))
    for index, (exp, act) in enumerate(zip(expected, actual)):
        differences += _compare(exp, act, options, path.child(f"[{index}]", ("item", index)))
    return differences


def _compare_mappings(
    expected: Mapping[Any, Any], actual: Mapping[Any, Any], options: CompareOptions, path: Path
) -> list[Difference]:
    """Dicts (ModelOutput included): same keys in the same order, then value by value."""
    differences = []
    expected_keys, actual_keys = list(expected.keys()), list(actual.keys())
    if expected_keys != actual_keys:
        message = _keys_message(expected_keys, actual_keys, path)
        differences.append(Difference(path, "structure", message))
    for key in expected_keys:
        if key in actual:
            key_path = path.child(_key_suffix(expected, key), ("key", key))
            differences += _compare(expected[key], actual[key], options, key_path)
    return differences


def _compare_fields(
    expected: Any, actual: Any, names: Any, options: CompareOptions, path: Path
) -> list[Difference]:
    """Dataclasses and namedtuples: attribute by attribute, with ``.name`` paths."""
    differences = []
    for name in names:
        exp, act = getattr(expected, name), getattr(actual, name)
        differences += _compare(exp, act, options, path.child(f".{name}", ("attr", name)))
    return differences


def _keys_message(expected_keys: list[Any], actual_keys: list[Any], path: Path) -> str:
    """Describe missing, unexpected or reordered keys."""
    missing = [key for key in expected_keys if key not in actual_keys]
    extra = [key for key in actual_keys if key not in expected_keys]
    if not missing and not extra:
        order = f"expected {expected_keys}, got {actual_keys}"
        return f"{path}: same keys in a different order: {order}"
    parts = []
    if missing:
        parts.append(f"missing keys {missing}")
    if extra:
        parts.append(f"unexpected keys {extra}")
    return f"{path}: " + ", ".join(parts)


def _key_suffix(mapping: Mapping[Any, Any], key: Any) -> str:
    """``.key`` for ModelOutput-like mappings mirroring items as attributes, else ``[key]``."""
    mirrored = (
        type(mapping) is not dict
        and isinstance(key, str)
        and key.isidentifier()
        and getattr(mapping, key, MISSING) is mapping[key]
    )
    return f".{key}" if mirrored else f"[{key!r}]"


# --------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------


def _compare_tensors(
    expected: torch.Tensor, actual: torch.Tensor, options: CompareOptions, path: Path
) -> list[Difference]:
    """Metadata first (layout, shape, dtype, device); values only when all of it matches."""
    differences = _bitwise_metadata(expected, actual, path) if options.bitwise else []
    expected, actual = expected.detach(), actual.detach()
    if options.bitwise:  # the exact type was compared: the values are a plain tensor's
        expected, actual = expected.as_subclass(torch.Tensor), actual.as_subclass(torch.Tensor)
    differences += _compare_metadata(expected, actual, path)
    if differences or expected.device.type == "meta":
        return differences
    if expected.is_nested:
        return _compare_sequences(
            list(expected.unbind()), list(actual.unbind()), options,
            path.child(".unbind()", ("unbind", None)),
        )
    if expected.layout != torch.strided:
        expected, actual = expected.to_dense(), actual.to_dense()
    if expected.is_quantized:
        expected, actual = expected.dequantize(), actual.dequantize()
    if expected.is_floating_point() or expected.is_complex():
        return _compare_floating(expected, actual, options, path)
    return _compare_exact(expected, actual, path)


def _compare_metadata(expected: torch.Tensor, actual: torch.Tensor, path: Path) -> list[Difference]:
    """Layout, shape, dtype and device must match exactly; strides are deliberately ignored."""
    differences = []
    if expected.layout != actual.layout or expected.is_nested != actual.is_nested:
        message = f"{path}: expected layout {_layout(expected)}, got {_layout(actual)}"
        return [Difference(path, "layout", message)]
    # A strided nested tensor has no shape; its components are compared one by one instead.
    if not expected.is_nested and expected.shape != actual.shape:
        message = f"{path}: expected shape {list(expected.shape)}, got {list(actual.shape)}"
        differences.append(Difference(path, "shape", message))
    if expected.dtype != actual.dtype:
        message = f"{path}: expected dtype {expected.dtype}, got {actual.dtype}"
        differences.append(Difference(path, "dtype", message))
    if expected.device != actual.device:
        message = f"{path}: expected device {expected.device}, got {actual.device}"
        differences.append(Difference(path, "device", message))
    return differences


def _bitwise_metadata(expected: torch.Tensor, actual: torch.Tensor,
                      path: Path) -> list[Difference]:
    """What bitwise mode adds to the metadata: strides (as ``stride_differences``: those of
    dimensions of size 1 mean nothing) and ``requires_grad``."""
    differences = []
    if expected.requires_grad != actual.requires_grad:
        message = (f"{path}: expected requires_grad={expected.requires_grad}, "
                   f"got {actual.requires_grad}")
        differences.append(Difference(path, "exact", message))
    return differences + stride_differences(expected, actual, path)


def _compare_exact(expected: torch.Tensor, actual: torch.Tensor, path: Path) -> list[Difference]:
    """Integer and bool tensors: every element equal."""
    mismatch = expected != actual
    count = int(mismatch.sum())
    if count == 0:
        return []
    index = _first_index(mismatch)
    abs_err, rel_err = _errors(_to_float64(expected), _to_float64(actual), _tiny(torch.float64))
    message = (
        f"{path}: {count} of {expected.numel()} elements differ ({expected.dtype} compares "
        f"exactly); first at index {_index_text(index)}: expected {expected[index].item()!r}, "
        f"got {actual[index].item()!r}"
    )
    return [Difference(path, "exact", message, abs_err.max().item(), rel_err.max().item())]


def _compare_floating(
    expected: torch.Tensor, actual: torch.Tensor, options: CompareOptions, path: Path
) -> list[Difference]:
    """NaN positions, infinity positions, finite values within tolerance, then signs if strict."""
    is_complex = expected.is_complex()
    dtype = expected.dtype
    # float64 holds every narrower float exactly and keeps |a - e| from overflowing in fp16.
    exp64, act64 = _to_float64(expected), _to_float64(actual)
    show = _ValueFormatter(exp64, act64, dtype, is_complex)
    exp_nan, act_nan = torch.isnan(exp64), torch.isnan(act64)
    either_nan = exp_nan | act_nan
    differences = []

    nan_mismatch = exp_nan != act_nan
    if nan_mismatch.any():
        differences.append(show.positions(path, "nan", "NaN positions differ", nan_mismatch))

    inf = math.inf
    inf_mismatch = ((exp64 == inf) != (act64 == inf)) | ((exp64 == -inf) != (act64 == -inf))
    inf_mismatch &= ~either_nan
    if inf_mismatch.any():
        differences.append(show.positions(path, "inf", "infinity positions differ", inf_mismatch))

    tolerance = options.tolerance(dtype)
    differences += _compare_finite(exp64, act64, tolerance, show, path)

    if options.strict or options.bitwise:
        sign_differs = torch.signbit(exp64) != torch.signbit(act64)
        zeros = (exp64 == 0) & (act64 == 0) & sign_differs
        if zeros.any():
            differences.append(show.positions(path, "signed_zero", "sign of zero differs", zeros))
        nans = exp_nan & act_nan & sign_differs
        if nans.any():
            differences.append(show.positions(path, "nan_sign", "NaN sign bit differs", nans))
    if options.bitwise and not differences:
        payloads = _bits(expected) != _bits(actual)
        if payloads.any():  # equal values and signs: only NaN payloads are left to differ
            what = "NaN payload bits differ"
            differences.append(show.positions(path, "nan_payload", what, payloads))
    return differences


_SAME_WIDTH_INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """A floating tensor's elements as same-width integers (complex: a trailing (real, imag)
    dimension), so that NaN payloads compare too."""
    tensor = tensor.resolve_conj().resolve_neg().contiguous()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return tensor.view(_SAME_WIDTH_INT[tensor.element_size()])


def _compare_finite(
    exp64: torch.Tensor,
    act64: torch.Tensor,
    tolerance: Tolerance,
    show: _ValueFormatter,
    path: Path,
) -> list[Difference]:
    """Elements finite on both sides must satisfy ``|a - e| <= atol + rtol * |e|``."""
    if exp64.numel() == 0:
        return []
    finite = torch.isfinite(exp64) & torch.isfinite(act64)
    abs_err, rel_err = _errors(exp64, act64, _tiny(show.dtype))
    bad = finite & (abs_err > tolerance.atol + tolerance.rtol * exp64.abs())
    count = int(bad.sum())
    if count == 0:
        return []
    worst = _unravel(int(abs_err.reshape(-1).argmax()), abs_err.shape)
    worst_rel = _unravel(int(rel_err.reshape(-1).argmax()), rel_err.shape)
    max_abs, max_rel = abs_err[worst].item(), rel_err[worst_rel].item()
    message = (
        f"{path}: {count} of {show.count} values differ beyond {_tolerance_text(tolerance)} "
        f"({show.dtype}); greatest absolute difference {max_abs:.3g} at index "
        f"{show.index(worst)} ({show.pair(worst)}), greatest relative difference "
        f"{max_rel:.3g} at index {show.index(worst_rel)}"
    )
    return [Difference(path, "value", message, max_abs, max_rel)]


class _ValueFormatter:
    """Render indices and element values of float64 copies in the original dtype's precision."""

    def __init__(
        self, exp64: torch.Tensor, act64: torch.Tensor, dtype: torch.dtype, is_complex: bool
    ):
        self.exp64, self.act64, self.dtype, self.is_complex = exp64, act64, dtype, is_complex
        self.count = exp64.numel() // 2 if is_complex else exp64.numel()
        self.digits = _DIGITS.get(_real_dtype(dtype), 17)

    def index(self, index: tuple[int, ...]) -> str:
        """The index in the original tensor; complex parts are named rather than numbered."""
        if self.is_complex:
            return f"{_index_text(index[:-1])} {('real', 'imag')[index[-1]]}"
        return _index_text(index)

    def pair(self, index: tuple[int, ...]) -> str:
        """``expected X, got Y`` at ``index``."""
        exp, act = self.exp64[index].item(), self.act64[index].item()
        return f"expected {self._number(exp)}, got {self._number(act)}"

    def positions(self, path: Path, kind: str, what: str, mask: torch.Tensor) -> Difference:
        """A difference for elements where ``mask`` holds, showing the first of them."""
        index = _first_index(mask)
        message = (
            f"{path}: {what} at {int(mask.sum())} of {self.count} values; first at index "
            f"{self.index(index)}: {self.pair(index)}"
        )
        return Difference(path, kind, message)

    def _number(self, value: float) -> str:
        # Python prints every NaN as "nan"; the sign bit is what strict mode is about.
        if math.isnan(value):
            return "-nan" if _sign(value) < 0 else "nan"
        return f"{value:.{self.digits}g}"


# --------------------------------------------------------------------------------------------
# Tensor helpers
# --------------------------------------------------------------------------------------------


def _to_float64(tensor: torch.Tensor) -> torch.Tensor:
    """A float64 copy; complex tensors become a trailing (real, imag) dimension."""
    if tensor.is_complex():
        # view_as_real refuses lazily conjugated or negated views.
        tensor = torch.view_as_real(tensor.resolve_conj().resolve_neg())
    return tensor.to(torch.float64)


def _errors(
    exp64: torch.Tensor, act64: torch.Tensor, tiny: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Element-wise absolute and relative errors, zero where either side is NaN or infinite."""
    finite = torch.isfinite(exp64) & torch.isfinite(act64)
    zero = torch.zeros((), dtype=torch.float64, device=exp64.device)
    abs_err = torch.where(finite, (act64 - exp64).abs(), zero)
    rel_err = torch.where(finite, abs_err / exp64.abs().clamp_min(tiny), zero)
    return abs_err, rel_err


def _floating_pair(
    expected: torch.Tensor, actual: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """float64 copies of two same-shaped floating (or two complex) tensors, else None."""
    expected, actual = expected.detach(), actual.detach()
    both_real = expected.is_floating_point() and actual.is_floating_point()
    both_complex = expected.is_complex() and actual.is_complex()
    comparable = (
        (both_real or both_complex)
        and not expected.is_nested
        and not actual.is_nested
        and expected.device == actual.device
        and expected.device.type != "meta"
        and expected.shape == actual.shape
        and expected.numel() > 0
    )
    if not comparable:
        return None
    if expected.layout != torch.strided:
        expected = expected.to_dense()
    if actual.layout != torch.strided:
        actual = actual.to_dense()
    return _to_float64(expected), _to_float64(actual)


def _first_index(mask: torch.Tensor) -> tuple[int, ...]:
    """Index of the first element where ``mask`` holds."""
    return _unravel(int(mask.reshape(-1).nonzero()[0, 0]), mask.shape)


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    """Multi-dimensional index of a flat (row-major) position."""
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def _index_text(index: tuple[int, ...]) -> str:
    return str(tuple(index))


def _real_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype.to_real() if dtype.is_complex else dtype


def _tiny(dtype: torch.dtype) -> float:
    """Smallest normal number of a floating dtype, the floor of relative-error denominators."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.finfo(dtype).tiny
    return torch.finfo(torch.float64).tiny


def _layout(tensor: torch.Tensor) -> str:
    return f"{tensor.layout} (nested)" if tensor.is_nested else str(tensor.layout)


def _tolerance_text(tolerance: Tolerance) -> str:
    return f"rtol={tolerance.rtol:.3g}, atol={tolerance.atol:.3g}"


# --------------------------------------------------------------------------------------------
# Kinds of values
# --------------------------------------------------------------------------------------------


def _is_numpy(obj: Any) -> bool:
    """numpy arrays and scalars, detected without importing numpy."""
    return type(obj).__module__ == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "shape")


# --------------------------------------------------------------------------------------------
# Scalars and messages
# --------------------------------------------------------------------------------------------


def _sign(value: float) -> float:
    return math.copysign(1.0, value)


def _sign_name(value: float) -> str:
    return "sign bit set" if _sign(value) < 0 else "sign bit clear"


def _safe_float(value: float) -> float:
    """``float(value)``, or infinity for ints too large for a float."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _relative(error: float, expected: float) -> float:
    return error / max(_safe_float(abs(expected)), sys.float_info.min)


def _type_name(obj: Any) -> str:
    return type(obj).__qualname__


def _short_repr(obj: Any, limit: int = 80) -> str:
    """A repr cut to ``limit`` characters; objects whose repr fails are named by type."""
    try:
        text = repr(obj)
    except Exception:
        return f"<{_type_name(obj)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(obj: Any) -> str:
    if isinstance(obj, torch.Tensor):
        # A strided nested tensor raises on .shape; its layout says enough.
        shape = "nested" if obj.is_nested else list(obj.shape)
        return f"{_type_name(obj)}(shape={shape}, dtype={obj.dtype})"
    return f"{_type_name(obj)} {_short_repr(obj)}"


def _type_difference(expected: Any, actual: Any, path: Path) -> Difference:
    message = f"{path}: expected {_describe(expected)}, got {_describe(actual)}"
    return Difference(path, "type", message)
