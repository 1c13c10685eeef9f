"""The numerical triage's measurements (``judge.py`` gives the rules and decides): where eager
and compiled differ in a floating value, element by element, whether the float64 reference
sides with eager or explains compiled, whether the program's own sensitivity (perturbed eager
runs) is as large, how large the errors are, and whether compiled is off by whole units where
the reference equals eager (an integer jump). Values are taken from each run by the keys of a
``Difference`` and compared as float64 tensors.

Imports torch and nothing else of eqrewrite but ``compare`` and ``nested``: it is vendored
into every reproducer with the rest of ``judging/``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from . import compare as cmp
from .nested import MISSING, fetch

REFERENCE_FACTOR = 2.0    # compiled may be this many times further from float64 than eager
SENSITIVITY_FACTOR = 2.0  # compiled may differ from eager by this many times the noise
SPECIALS_TOLERANCE = 4.0  # where eager is NaN/inf, compiled within 4 tolerances of float64
WIDESPREAD = 0.25         # share of a tensor's elements moved by perturbation: "unstable"


def reference_agreement(differences: list[cmp.Difference], eager: Any, compiled: Any,
                        reference: Any, options: cmp.CompareOptions) -> tuple[str, str]:
    """Which side the reference takes where eager and compiled differ: ``(side, note)``,
    side one of ``eager``, ``compiled``, ``both``, ``neither``, ``unavailable``. Floating
    values are judged element by element, only where the two runs disagree."""
    sides = set()
    for difference in differences:
        r = fetch(reference, difference.keys)
        if r is MISSING:
            return "unavailable", f"the reference has no {difference.path}"
        values = _values(difference, eager, compiled, reference) if difference.floating else None
        if values is not None:
            with_eager, with_compiled = _sides(difference.kind, *values, options)
        else:
            e, c = fetch(eager, difference.keys), fetch(compiled, difference.keys)
            with_eager = not cmp.compare(like(r, e), e, options, difference.path)
            with_compiled = not cmp.compare(like(r, c), c, options, difference.path)
        sides.add({(True, False): "eager", (False, True): "compiled",
                   (True, True): "both"}.get((with_eager, with_compiled), "neither"))
    if len(sides) == 1:
        return sides.pop(), ""
    return "neither", "it differs from value to value: " + ", ".join(sorted(sides))


def _sides(kind: str, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor, dtype: torch.dtype,
           options: cmp.CompareOptions) -> tuple[bool, bool]:
    """(reference close to eager, reference close to compiled) where they differ: the same
    sign for sign differences, else the same NaN/infinity class and within tolerance."""
    tolerance = options.tolerance(dtype)
    allowed = tolerance.atol + tolerance.rtol * r.abs()
    differs = _differing(kind, e, c, allowed)

    def close(x: torch.Tensor) -> bool:
        if kind in ("signed_zero", "nan_sign"):
            same = torch.signbit(x) == torch.signbit(r)
        else:
            same = (_special_class(x) == _special_class(r)) & (
                ~torch.isfinite(r) | ((x - r).abs() <= allowed))
        return bool(same[differs].all())

    return close(e), close(c)


def like(reference: Any, shaped: Any) -> Any:
    """``reference`` with each floating tensor cast to the dtype of the matching tensor of
    ``shaped`` (a float64 reference judged in the program's own dtype)."""
    if isinstance(reference, torch.Tensor) and isinstance(shaped, torch.Tensor):
        same_kind = reference.is_floating_point() == shaped.is_floating_point()
        return reference.to(shaped.dtype) if same_kind else reference
    if isinstance(reference, float) and isinstance(shaped, float):
        return reference
    if isinstance(reference, list | tuple) and isinstance(shaped, list | tuple) and len(
            reference) == len(shaped):
        items = [like(r, s) for r, s in zip(reference, shaped)]
        return items if isinstance(reference, list) else tuple(items)
    if isinstance(reference, dict) and isinstance(shaped, dict):
        return {k: like(v, shaped[k]) if k in shaped else v for k, v in reference.items()}
    if hasattr(reference, "fields") and hasattr(shaped, "fields"):  # records
        return type(reference)(reference.type, like(reference.fields, shaped.fields))
    return reference


def unexplained_by_reference(differences: list[cmp.Difference], eager: Any, compiled: Any,
                             reference: Any, options: cmp.CompareOptions) -> list[cmp.Difference]:
    """The floating differences the float64 reference does not explain."""
    left = []
    for difference in differences:
        values = _values(difference, eager, compiled, reference)
        if values is None or not _reference_explains(difference.kind, *values, options):
            left.append(difference)
    return left


def unexplained_by_sensitivity(differences: list[cmp.Difference], eager: Any, compiled: Any,
                               perturbed: list[Any], options: cmp.CompareOptions
                               ) -> list[cmp.Difference]:
    """The floating differences larger than the program's own measured sensitivity."""
    left = []
    for difference in differences:
        e, c = _as_float64(fetch(eager, difference.keys)), _as_float64(
            fetch(compiled, difference.keys))
        moved = _all_as_float64(perturbed, difference.keys)
        if e is None or c is None or not moved or any(
                m.shape != e.shape for m in moved) or e.shape != c.shape:
            left.append(difference)
            continue
        tolerance = _tolerance(difference, eager, options, e)
        differs = _differing(difference.kind, e, c, tolerance)
        if not bool((differs & ~_moves_as_much(difference.kind, e, c, moved, tolerance)).any()):
            continue
        left.append(difference)
    return left


def _moves_as_much(kind: str, e: torch.Tensor, c: torch.Tensor, moved: list[torch.Tensor],
                   tolerance: torch.Tensor) -> torch.Tensor:
    """Where perturbed eager runs change the result as much as compiled does: at the
    element itself, or at a large share of the tensor's elements (the program's instability
    is the same formula everywhere; a few random perturbations need not hit every element)."""
    if kind == "value":
        noise, _ = _noise(e, moved)
        diff = torch.where(torch.isfinite(c - e), (c - e).abs(), 0.0)
        here = diff <= SENSITIVITY_FACTOR * noise + tolerance
        ranked = noise.flatten().sort().values
        needed = diff.flatten() / SENSITIVITY_FACTOR
        share = 1 - torch.searchsorted(ranked, needed).double() / max(ranked.numel(), 1)
        return here | (share >= WIDESPREAD).reshape(e.shape)
    if kind in ("nan", "inf"):
        _, flipped = _noise(e, moved)
    else:  # signed_zero, nan_sign
        flipped = torch.zeros(e.shape, dtype=torch.bool)
        for m in moved:
            flipped |= torch.signbit(m) != torch.signbit(e)
    return flipped | bool(flipped.double().mean() >= WIDESPREAD)


def sensitivity(differences: list[cmp.Difference], eager: Any, perturbed: list[Any]) -> float:
    """Largest finite ``|perturbed - eager|`` over the differing values."""
    largest = 0.0
    for difference in differences:
        e = _as_float64(fetch(eager, difference.keys))
        moved = _all_as_float64(perturbed, difference.keys)
        if e is None or not moved or any(m.shape != e.shape for m in moved):
            continue
        noise, _ = _noise(e, moved)
        if noise.numel():
            largest = max(largest, float(noise.max()))
    return largest


def errors(differences: list[cmp.Difference], eager: Any, compiled: Any,
           reference: Any | None) -> tuple[float | None, float | None, float]:
    """(max |eager - reference|, max |compiled - reference|, max |compiled - eager|) over
    the finite elements where eager and compiled differ."""
    worst = [0.0, 0.0, 0.0]
    for difference in differences:
        e = _as_float64(fetch(eager, difference.keys))
        c = _as_float64(fetch(compiled, difference.keys))
        r = None if reference is None else _as_float64(fetch(reference, difference.keys))
        if e is None or c is None or e.shape != c.shape:
            continue
        where = (c != e) & ~(torch.isnan(c) & torch.isnan(e))
        for slot, left, right in ((0, e, r), (1, c, r), (2, c, e)):
            if right is None or right.shape != left.shape:
                continue
            finite = where & torch.isfinite(left) & torch.isfinite(right)
            if finite.any():
                worst[slot] = max(worst[slot], float((left - right).abs()[finite].max()))
    if reference is None:
        return None, None, worst[2]
    return worst[0], worst[1], worst[2]


# -- integer jumps ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Jump:
    """A floating difference where compiled is off by whole units and the reference sides
    with eager: the difference, and the elements where compiled jumped."""

    difference: cmp.Difference
    where: torch.Tensor


def integer_jumps(differences: list[cmp.Difference], eager: Any, compiled: Any,
                  reference: Any, options: cmp.CompareOptions) -> list[Jump]:
    """The floating value differences where, at the elements that differ, eager, compiled and
    the reference are whole numbers, the reference equals eager and compiled is off by whole
    units at some, and the reference is nowhere (within tolerance) compiled's value. Which
    operation made the values, and whether the reference's answer is robust, is for the
    caller to check (``decide``)."""
    found = []
    for difference in differences:
        values = _values(difference, eager, compiled, reference) if difference.kind == (
            "value") else None
        if values is None:
            continue
        e, c, r, dtype = values
        tolerance = options.tolerance(dtype)
        allowed = tolerance.atol + tolerance.rtol * r.abs()
        differs = _differing("value", e, c, allowed)
        whole = differs & _integral(e) & _integral(c) & _integral(r)
        jumped = whole & (r == e)
        sides_with_compiled = differs & ((c - r).abs() <= allowed)
        if bool(jumped.any()) and not bool(sides_with_compiled.any()):
            found.append(Jump(difference, jumped))
    return found


def steady(jumps: list[Jump], compiled: Any, reference: Any, nudged: list[Any]) -> bool:
    """Whether every nudged reference has the reference's whole numbers wherever compiled
    jumped: the exact answer there is not decided by rounding (a quotient that is exactly an
    integer, a residue of an exact zero, would flip under the nudge)."""
    for jump in jumps:
        shaped = fetch(compiled, jump.difference.keys)
        r = _as_float64(like(fetch(reference, jump.difference.keys), shaped))
        for other in nudged:
            n = _as_float64(like(fetch(other, jump.difference.keys), shaped))
            if r is None or n is None or n.shape != r.shape or not bool(
                    (n == r)[jump.where].all()):
                return False
    return True


# -- element-wise rules -----------------------------------------------------------------------


def _values(difference: cmp.Difference, eager: Any, compiled: Any, reference: Any
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.dtype] | None:
    """float64 tensors of the three runs at the difference, or None if one is not numeric;
    then the program's dtype there. The reference is first rounded to the program's dtype:
    the exact result of a float16 program that lies beyond float16's range is infinity."""
    shaped = fetch(compiled, difference.keys)
    e, c, r = (_as_float64(fetch(eager, difference.keys)), _as_float64(shaped),
               _as_float64(like(fetch(reference, difference.keys), shaped)))
    if e is None or c is None or r is None or len({e.shape, c.shape, r.shape}) != 1:
        return None
    return e, c, r, _dtype(shaped)


def _reference_explains(kind: str, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor,
                        dtype: torch.dtype, options: cmp.CompareOptions) -> bool:
    tolerance = options.tolerance(dtype)
    allowed = tolerance.atol + tolerance.rtol * r.abs()
    differs = _differing(kind, e, c, allowed)
    if kind == "value":
        # Element by element, compiled within twice eager's error there, or twice eager's
        # largest error in this tensor (rounding of the same computation), or tolerance.
        eager_error = torch.where(torch.isfinite(e - r), (e - r).abs(), 0.0)
        worst = float(eager_error.max()) if eager_error.numel() else 0.0
        bound = torch.maximum(REFERENCE_FACTOR * eager_error, allowed).clamp(
            min=REFERENCE_FACTOR * worst)
        closer = (c - r).abs() <= bound
        return not bool((differs & ~closer).any())
    if kind in ("nan", "inf"):
        same_as_reference = _special_class(r) == _special_class(c)
        finite = torch.isfinite(c) & torch.isfinite(r)
        close = ~finite | ((c - r).abs() <= SPECIALS_TOLERANCE * allowed)
        return not bool((differs & ~(same_as_reference & close)).any())
    if kind in ("signed_zero", "nan_sign"):
        return not bool((differs & (torch.signbit(r) != torch.signbit(c))).any())
    return False


def _differing(kind: str, e: torch.Tensor, c: torch.Tensor,
               allowed: torch.Tensor) -> torch.Tensor:
    """The elements a difference of ``kind`` is about."""
    if kind == "value":
        finite = torch.isfinite(e) & torch.isfinite(c)
        beyond: torch.Tensor = finite & ((c - e).abs() > allowed)
        return beyond
    if kind in ("nan", "inf"):
        return _special_class(e) != _special_class(c)
    sign = torch.signbit(e) != torch.signbit(c)
    if kind == "signed_zero":
        return sign & (e == 0) & (c == 0)
    if kind == "nan_sign":
        return sign & torch.isnan(e) & torch.isnan(c)
    return torch.ones(e.shape, dtype=torch.bool)


def _integral(t: torch.Tensor) -> torch.Tensor:
    """Finite whole numbers, element-wise."""
    return torch.isfinite(t) & (t == torch.round(t))


def _special_class(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +inf, 3 -inf, element-wise."""
    out = torch.zeros(t.shape, dtype=torch.int8)
    out[torch.isnan(t)] = 1
    out[t == math.inf] = 2
    out[t == -math.inf] = 3
    return out


def _noise(e: torch.Tensor, moved: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Element-wise largest finite move under perturbation, and where the class flipped."""
    noise = torch.zeros(e.shape, dtype=torch.float64)
    unstable = torch.zeros(e.shape, dtype=torch.bool)
    for m in moved:
        finite = torch.isfinite(e) & torch.isfinite(m)
        noise = torch.maximum(noise, torch.where(finite, (m - e).abs(), 0.0))
        unstable |= _special_class(m) != _special_class(e)
    return noise, unstable


def _tolerance(difference: cmp.Difference, eager: Any, options: cmp.CompareOptions,
               e: torch.Tensor) -> torch.Tensor:
    dtype = _dtype(fetch(eager, difference.keys))
    tolerance = options.tolerance(dtype)
    return tolerance.atol + tolerance.rtol * e.abs()


def _all_as_float64(runs: list[Any], keys: tuple[tuple[str, Any], ...]
                    ) -> list[torch.Tensor] | None:
    """``_as_float64`` of the value at ``keys`` in each of ``runs``; None if one is not
    numeric."""
    found = []
    for run in runs:
        value = _as_float64(fetch(run, keys))
        if value is None:
            return None
        found.append(value)
    return found


def _dtype(value: Any) -> torch.dtype:
    return value.dtype if isinstance(value, torch.Tensor) else torch.float64


def _as_float64(value: Any) -> torch.Tensor | None:
    """A float64 tensor for a floating tensor or Python float; None for anything else."""
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        tensor = value.detach()
        if tensor.is_complex():
            tensor = torch.view_as_real(tensor.resolve_conj().resolve_neg())
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        return tensor.to(torch.float64)
    if isinstance(value, float) and not isinstance(value, bool):
        return torch.tensor(value, dtype=torch.float64)
    return None
