"""What the generator knows about each value a program has built so far.

Programs are built by running them: every statement is executed as soon as it is chosen, so
a value's shape, dtype, layout and aliasing are read off the real tensor (``describe``), not
predicted by shape rules. ``Info`` is that description, and ``literal`` spells Python values
(numbers with inf/NaN/-0.0, dtypes, shapes) as source text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MAX_NUMEL = 4096  # larger intermediate results are refused: programs stay fast to run


@dataclass(frozen=True)
class Info:
    """A tensor value reachable by ``name`` (a local, an input, ``self.p0``)."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    contiguous: bool
    channels_last: bool
    storage: int          # identity of the storage (for aliasing), 0 for none
    storage_numel: int    # elements in the underlying storage
    offset: int           # storage offset
    born: int             # statement count when created (recency)
    origin: str = "local"  # local | input | param | buffer

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    @property
    def floating(self) -> bool:
        return self.dtype.is_floating_point


def describe(name: str, tensor: torch.Tensor, born: int, origin: str = "local") -> Info:
    """The Info of a concrete tensor."""
    storage = tensor.untyped_storage()
    size = tensor.element_size()
    return Info(
        name=name, shape=tuple(tensor.shape), dtype=tensor.dtype,
        contiguous=tensor.is_contiguous(),
        channels_last=tensor.dim() == 4 and tensor.is_contiguous(
            memory_format=torch.channels_last) and not tensor.is_contiguous(),
        storage=storage.data_ptr() if storage.nbytes() else 0,
        storage_numel=storage.nbytes() // size, offset=tensor.storage_offset(), born=born,
        origin=origin)


def acceptable(value: object) -> bool:
    """A value the generator may keep: a dense CPU tensor of a supported dtype, not huge."""
    return (isinstance(value, torch.Tensor) and value.layout == torch.strided
            and not value.is_complex() and value.numel() <= MAX_NUMEL
            and value.dtype in DTYPES.values())


DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool")}


def literal(value: object) -> str:
    """Source text for a number, bool, string, dtype or tuple of those."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def broadcastable(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
    """Whether two shapes broadcast together."""
    for a, b in zip(reversed(left), reversed(right)):
        if a != b and a != 1 and b != 1:
            return False
    return True


def broadcast_to_left(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
    """Whether ``right`` broadcasts to exactly ``left`` (what an in-place op needs)."""
    return len(right) <= len(left) and broadcastable(left, right) and all(
        b in (1, a) for a, b in zip(reversed(left), reversed(right)))
