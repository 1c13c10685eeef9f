"""Nested values, as runs return them: tensors inside lists, tuples, dicts (``ModelOutput``
included, whose items are mirrored as attributes), named tuples, structseqs and dataclasses.

What the judging does to such a value besides comparing it (``compare.py``): drain its
iterators (``materialize``), copy it with every floating tensor cast to another dtype
(``cast_floating``, the float64 reference's inputs), reach the part a ``Difference``'s keys
lead to (``fetch``), and pair the tensors at matching places of two values
(``tensor_pairs``). The copies copy every container, so that a later run cannot change
(append to) the caller's values.

Imports torch and nothing else: it is vendored into every reproducer with the rest of
``judging/``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

MISSING = object()  # what ``fetch`` returns for a location the value does not have


def materialize(obj: Any) -> Any:
    """Drain iterators (generators, ``map``, ``zip``...) into lists, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, Iterator):
        return [materialize(item) for item in obj]
    return _rebuild(obj, materialize)


def cast_floating(obj: Any, dtype: torch.dtype) -> Any:
    """Copy of a nested structure with every floating (and complex) tensor cast to ``dtype``."""
    if not dtype.is_floating_point:
        raise ValueError(f"cast_floating needs a floating dtype, got {dtype}")

    def cast(item: Any) -> Any:
        if isinstance(item, torch.Tensor):
            return _cast_tensor(item, dtype)
        return _rebuild(item, cast)

    return cast(obj)


def fetch(value: Any, keys: tuple[tuple[str, Any], ...]) -> Any:
    """The part of ``value`` that ``keys`` (a Difference's) lead to; ``MISSING`` if none."""
    for step, key in keys:
        try:
            if step == "attr":
                value = getattr(value, key)
            elif step == "key" and isinstance(value, Mapping):
                value = value[key]
            elif step == "item" and isinstance(value, (list, tuple)):
                value = value[key]
            elif step == "unbind" and isinstance(value, torch.Tensor):
                value = list(value.unbind())
            else:
                return MISSING
        except (AttributeError, KeyError, IndexError, TypeError):
            return MISSING
    return value


def _rebuild(obj: Any, convert: Callable[[Any], Any]) -> Any:
    """A copy of container ``obj`` with ``convert`` applied to each child; leaves unchanged."""
    # Containers are always copied so a later run cannot mutate (append to) the caller's values.
    if isinstance(obj, (torch.Tensor, torch.Size, str, bytes)):
        return obj
    if isinstance(obj, list):
        return [convert(item) for item in obj]
    if isinstance(obj, tuple):
        items = [convert(item) for item in obj]
        if type(obj) is tuple:
            return tuple(items)
        if hasattr(obj, "_make"):  # a named tuple
            return obj._make(items)
        return type(obj)(items)  # structseq such as torch.return_types.max
    if isinstance(obj, dict):
        return _rebuild_dict(obj, convert)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        new = copy.copy(obj)
        for f in dataclasses.fields(obj):
            # object.__setattr__ also works on frozen dataclasses.
            object.__setattr__(new, f.name, convert(getattr(obj, f.name)))
        return new
    return obj


def _rebuild_dict(obj: dict[Any, Any], convert: Callable[[Any], Any]) -> dict[Any, Any]:
    """Copy a dict (subclasses keep their type and mirrored attributes, as in ModelOutput)."""
    if type(obj) is dict:
        return {key: convert(value) for key, value in obj.items()}
    new = copy.copy(obj)
    for key, value in obj.items():
        converted = convert(value)
        dict.__setitem__(new, key, converted)
        if isinstance(key, str) and key.isidentifier() and getattr(obj, key, MISSING) is value:
            object.__setattr__(new, key, converted)
    return new


def tensor_pairs(expected: Any, actual: Any) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Tensors at matching positions of two nested values; mismatched parts are skipped."""
    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
        yield expected, actual
    elif isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in expected:
            if key in actual:
                yield from tensor_pairs(expected[key], actual[key])
    elif _is_sequence(expected) and _is_sequence(actual):
        for exp, act in zip(expected, actual):
            yield from tensor_pairs(exp, act)
    elif (
        dataclasses.is_dataclass(expected)
        and not isinstance(expected, type)
        and type(expected) is type(actual)
    ):
        for f in dataclasses.fields(expected):
            yield from tensor_pairs(getattr(expected, f.name), getattr(actual, f.name))


def _is_sequence(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size)


_COMPLEX_OF = {
    torch.float64: torch.complex128,
    torch.float32: torch.complex64,
    torch.float16: torch.complex32,
}


def _cast_tensor(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A fresh ``dtype`` copy of a floating tensor (complex keeps complex); others unchanged."""
    if tensor.is_floating_point():
        target = dtype
    elif tensor.is_complex() and dtype in _COMPLEX_OF:
        target = _COMPLEX_OF[dtype]
    else:
        return tensor
    # A detached leaf keeps requires_grad, so a reference run can still call backward().
    cast = tensor.detach().to(target, copy=True).requires_grad_(tensor.requires_grad)
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(cast, requires_grad=tensor.requires_grad)
    return cast
