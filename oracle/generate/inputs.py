"""The inputs a generated program receives: shapes, dtypes, layouts and boundary values.

Inputs are where the study's triggers start: non-contiguous tensors (transposed, strided,
offset, expanded, permuted, channels-last), mixed dtypes (float16, bfloat16, integers, uint8,
bool), and boundary values (-0.0, ±inf, NaN, the largest finite value, integers at their
type's limits, empty tensors). ``draw_inputs`` picks them; ``render_get_inputs`` writes the
``get_inputs()`` function that builds them from a seeded ``torch.Generator``, so the program
is self-contained and its inputs do not depend on the caller's RNG state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TypedDict

from .values import literal

FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
_DTYPE_WEIGHTS = {"float32": 40, "float16": 7, "bfloat16": 7, "float64": 5, "int64": 8,
                  "int32": 5, "int16": 2, "int8": 3, "uint8": 4, "bool": 4}
_LAYOUT_WEIGHTS = {"contiguous": 45, "transposed": 15, "strided": 8, "offset": 6,
                   "expanded": 6, "permuted": 6, "channels_last": 14}
_LIMITS = {"int64": (-2**63, 2**63 - 1), "int32": (-2**31, 2**31 - 1),
           "int16": (-2**15, 2**15 - 1), "int8": (-128, 127), "uint8": (0, 255)}
_LARGEST = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308,
            "float16": 65504.0, "bfloat16": 3.3895313892515355e38}


class InputSpecRecord(TypedDict):
    """An ``InputSpec`` as JSON (``eqrewrite gen``'s manifest)."""

    name: str
    shape: list[int]
    dtype: str
    layout: str
    specials: list[str]             # the boundary values, as literals
    scalar: float | int | None


@dataclass(frozen=True)
class InputSpec:
    """One argument of the target: a tensor (shape, dtype, layout, boundary values placed at
    flat positions of its base) or a Python number (``dtype`` ``"float"``/``"int"``)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: str = "contiguous"
    specials: tuple[tuple[int, float | int], ...] = ()
    scalar: float | int | None = None

    @property
    def is_tensor(self) -> bool:
        return self.scalar is None

    def describe(self) -> str:
        """One line for the program's docstring and metadata."""
        if not self.is_tensor:
            return f"{self.name}: Python {self.dtype} {literal(self.scalar)}"
        parts = [f"{self.name}: {self.dtype}{list(self.shape)}", self.layout]
        if self.specials:
            parts.append("values " + ", ".join(literal(v) for _, v in self.specials))
        if 0 in self.shape:
            parts.append("empty")
        return " ".join(parts)

    def to_dict(self) -> InputSpecRecord:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype,
                "layout": self.layout, "specials": [literal(v) for _, v in self.specials],
                "scalar": self.scalar}


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = list(weights)
    return rng.choices(names, [weights[n] for n in names])[0]


def draw_shape(rng: random.Random, rank: int | None = None) -> tuple[int, ...]:
    """A small shape; rank 2-3 most often, occasionally empty (a 0-sized dimension)."""
    if rank is None:
        rank = rng.choices([0, 1, 2, 3, 4], [3, 14, 38, 27, 18])[0]
    sizes = (1, 2, 3, 4, 5, 6, 8) if rank <= 2 else (1, 2, 3, 4, 5)
    shape = [rng.choice(sizes) for _ in range(rank)]
    if rank and rng.random() < 0.04:
        shape[rng.randrange(rank)] = 0
    return tuple(shape)


def related_shape(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape`` (same, suffix, or with some sizes 1), or a new
    one: inputs that combine are more useful than unrelated ones."""
    choice = rng.random()
    if choice < 0.45 or not shape:
        return shape
    if choice < 0.65:
        return shape[rng.randrange(len(shape)):]
    if choice < 0.85:
        return tuple(1 if rng.random() < 0.4 else s for s in shape)
    return draw_shape(rng)


def draw_input(rng: random.Random, name: str, shape: tuple[int, ...],
               boundary: float, dtype: str | None = None) -> InputSpec:
    """One tensor input with a random (or the given) dtype, a random layout and (with
    probability ``boundary``) boundary values."""
    dtype = dtype or _weighted(rng, _DTYPE_WEIGHTS)
    layouts = {k: w for k, w in _LAYOUT_WEIGHTS.items() if _layout_fits(k, shape)}
    layout = _weighted(rng, layouts)
    specials: tuple[tuple[int, float | int], ...] = ()
    numel = _base_numel(shape, layout)
    if numel and rng.random() < boundary:
        specials = _specials(rng, dtype, numel)
    return InputSpec(name, shape, dtype, layout, specials)


def draw_scalar(rng: random.Random, name: str) -> InputSpec:
    """A Python number argument (Dynamo specialises on it, or not)."""
    if rng.random() < 0.5:
        return InputSpec(name, (), "float", scalar=rng.choice([0.5, -1.5, 2.0, 1e-3, -0.0]))
    return InputSpec(name, (), "int", scalar=rng.choice([0, 1, 3, -2]))


def _layout_fits(layout: str, shape: tuple[int, ...]) -> bool:
    rank = len(shape)
    return {"contiguous": True, "transposed": rank >= 2, "strided": rank >= 1,
            "offset": rank >= 1, "expanded": rank >= 1 and any(s > 1 for s in shape),
            "permuted": rank >= 3, "channels_last": rank == 4}[layout]


def _base_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """The shape of the tensor the input is a view of."""
    base = list(shape)
    if layout == "transposed":
        base[-1], base[-2] = base[-2], base[-1]
    elif layout == "strided":
        base[-1] = base[-1] * 2
    elif layout == "offset":
        base[0] += 1
    elif layout == "expanded":
        base[_expanded_dim(shape)] = 1
    elif layout == "permuted":
        base = base[1:] + base[:1]
    return tuple(base)


def _expanded_dim(shape: tuple[int, ...]) -> int:
    return next(i for i, s in enumerate(shape) if s > 1)


def _base_numel(shape: tuple[int, ...], layout: str) -> int:
    numel = 1
    for size in _base_shape(shape, layout):
        numel *= size
    return numel


def _specials(rng: random.Random, dtype: str,
              numel: int) -> tuple[tuple[int, float | int], ...]:
    """(flat position, value) of a few boundary values to write into a tensor."""
    if dtype == "bool":
        return ()
    pool: list[float | int]
    if dtype in INT_DTYPES:
        low, high = _LIMITS[dtype]
        pool = [high, high - 1, low, low + 1] if dtype != "uint8" else [255, 254, 0, 128]
    else:
        pool = [-0.0, -0.0, float("inf"), float("-inf"), float("nan"), _LARGEST[dtype],
                -_LARGEST[dtype], 0.0, 1e-30 if dtype != "float16" else 6e-8]
    count = min(numel, rng.randint(1, 3))
    positions = sorted(rng.sample(range(numel), count))
    return tuple((p, rng.choice(pool)) for p in positions)


def render_get_inputs(specs: list[InputSpec], seed: int) -> list[str]:
    """Source lines of ``get_inputs()`` building ``specs`` from a generator seeded ``seed``."""
    lines = ["def get_inputs():", f"    g = torch.Generator().manual_seed({seed})"]
    for spec in specs:
        lines += ["    " + line for line in _build_lines(spec)]
    lines.append("    return [" + ", ".join(s.name for s in specs) + "]")
    return lines


def _build_lines(spec: InputSpec) -> list[str]:
    if not spec.is_tensor:
        return [f"{spec.name} = {literal(spec.scalar)}"]
    base = f"b_{spec.name}"
    dims = ", ".join(str(s) for s in _base_shape(spec.shape, spec.layout))
    size = f"({dims},)" if dims and "," not in dims else f"({dims})"
    lines = [f"{base} = {_factory(spec.dtype, size)}"]
    if spec.specials:
        positions = [p for p, _ in spec.specials]
        values = ", ".join(literal(v) for _, v in spec.specials)
        lines.append(f"{base}.view(-1)[{positions}] = torch.tensor([{values}], "
                     f"dtype=torch.{spec.dtype})")
    lines.append(f"{spec.name} = {base}{_layout_suffix(spec)}")
    return lines


def _factory(dtype: str, size: str) -> str:
    if dtype == "bool":
        return f"torch.rand({size}, generator=g) > 0.5"
    if dtype == "uint8":
        return f"torch.randint(0, 256, {size}, generator=g, dtype=torch.uint8)"
    if dtype in INT_DTYPES:
        return f"torch.randint(-8, 9, {size}, generator=g, dtype=torch.{dtype})"
    return f"torch.randn({size}, generator=g, dtype=torch.{dtype})"


def _layout_suffix(spec: InputSpec) -> str:
    rank = len(spec.shape)
    if spec.layout == "transposed":
        return f".transpose({rank - 2}, {rank - 1})"
    if spec.layout == "strided":
        return "[..., ::2]"
    if spec.layout == "offset":
        return "[1:]"
    if spec.layout == "expanded":
        return f".expand{literal(spec.shape)}"
    if spec.layout == "permuted":
        order = (rank - 1, *range(rank - 1))
        return f".permute{literal(order)}"
    if spec.layout == "channels_last":
        return ".contiguous(memory_format=torch.channels_last)"
    return ""
