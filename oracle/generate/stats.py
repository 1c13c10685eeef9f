"""Many programs at once, and what a batch of them covers.

``generate_many`` yields ``(seed, Program or GenerationError)`` in seed order, in this process
or in ``jobs`` spawned worker processes (the programs are the same either way: each depends
only on its seed and the config). ``BatchStats`` adds them up: the validity rate (valid
programs per drafted candidate), how many candidate statements ran, op coverage against the
table, and how often each feature, dtype, layout and kind of boundary value appeared.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TypedDict

from .program import GenConfig, GenerationError, Program, StatementCounts, generate
from .table import OpTable


def _one(seed: int, config: GenConfig) -> Program | GenerationError:
    try:
        return generate(seed, config)
    except GenerationError as error:
        return error


def generate_many(seeds: Iterable[int], config: GenConfig | None = None,
                  jobs: int = 1) -> Iterator[tuple[int, Program | GenerationError]]:
    """``(seed, program)`` for every seed, in order; a seed without a valid program within
    ``config.max_attempts`` gives its ``GenerationError`` instead of stopping the batch."""
    config = config or GenConfig()
    seeds = list(seeds)
    if jobs <= 1:
        for seed in seeds:
            yield seed, _one(seed, config)
        return
    context = multiprocessing.get_context("spawn")  # torch and fork do not mix
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        chunk = max(1, min(16, len(seeds) // (4 * jobs)))
        yield from zip(seeds, pool.map(_one, seeds, [config] * len(seeds), chunksize=chunk))


class OpCounts(TypedDict):
    table: int
    used: int
    coverage: float
    unused: list[str]
    uses: dict[str, int]


class InputCounts(TypedDict):
    dtypes: dict[str, int]
    layouts: dict[str, int]
    values: dict[str, int]          # boundary: "empty" or "sized"


class BatchRecord(TypedDict):
    """``BatchStats`` as JSON (``eqrewrite gen --stats``, the manifest's ``stats``)."""

    programs: int
    failed_seeds: list[int]
    candidates: int
    validity: float
    statements: StatementCounts
    ops: OpCounts
    features: dict[str, int]
    inputs: InputCounts
    rejections: dict[str, int]
    seconds: float


@dataclass
class BatchStats:
    """Figures over a batch of generated programs."""

    table: OpTable
    programs: int = 0
    failed: list[int] = field(default_factory=list)
    candidates: int = 0
    statements_tried: int = 0
    statements_kept: int = 0
    op_uses: Counter[str] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    dtypes: Counter[str] = field(default_factory=Counter)
    layouts: Counter[str] = field(default_factory=Counter)
    boundary: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.perf_counter)

    def add(self, seed: int, result: Program | GenerationError, attempts: int = 0) -> None:
        """Count one seed's outcome."""
        if isinstance(result, GenerationError):
            self.failed.append(seed)
            self.candidates += attempts
            return
        self.programs += 1
        self.candidates += result.attempts
        self.statements_tried += result.statements_tried
        self.statements_kept += result.statements_kept
        self.op_uses.update(result.ops)
        self.features.update(result.features)
        self.rejections.update(reason.split(":")[0] for reason in result.rejected)
        for spec in result.inputs:
            self.dtypes[spec.dtype] += 1
            if spec.is_tensor:
                self.layouts[spec.layout] += 1
                self.boundary["empty" if 0 in spec.shape else "sized"] += 1
                self.boundary.update(_special_kind(v) for _, v in spec.specials)

    @property
    def validity(self) -> float:
        """Valid programs per drafted candidate."""
        return self.programs / self.candidates if self.candidates else 0.0

    @property
    def coverage(self) -> float:
        """Fraction of the table's ops used at least once."""
        return len(self.op_uses) / len(self.table.ops)

    def unused_ops(self) -> list[str]:
        return sorted(op.id for op in self.table.ops if op.id not in self.op_uses)

    def to_dict(self) -> BatchRecord:
        seconds = time.perf_counter() - self.started
        return {
            "programs": self.programs, "failed_seeds": self.failed,
            "candidates": self.candidates, "validity": round(self.validity, 4),
            "statements": {"tried": self.statements_tried, "kept": self.statements_kept},
            "ops": {"table": len(self.table.ops), "used": len(self.op_uses),
                    "coverage": round(self.coverage, 4), "unused": self.unused_ops(),
                    "uses": dict(sorted(self.op_uses.items()))},
            "features": dict(sorted(self.features.items())),
            "inputs": {"dtypes": dict(sorted(self.dtypes.items())),
                       "layouts": dict(sorted(self.layouts.items())),
                       "values": dict(sorted(self.boundary.items()))},
            "rejections": dict(self.rejections.most_common()),
            "seconds": round(seconds, 2),
        }

    def render(self) -> str:
        """The figures as text for people."""
        data = self.to_dict()
        ops = data["ops"]
        lines = [
            f"programs: {self.programs} valid, {len(self.failed)} seeds without one",
            f"validity: {self.validity:.1%} of {self.candidates} drafted candidates ran "
            f"eagerly twice with identical results",
            f"statements: {self.statements_kept} kept of {self.statements_tried} tried "
            f"({self.statements_kept / max(self.statements_tried, 1):.1%})",
            f"op coverage: {ops['used']}/{ops['table']} table ops ({self.coverage:.1%})",
            f"unused ops: {', '.join(ops['unused']) or 'none'}",
            "features (programs): " + _counts(self.features),
            "input dtypes: " + _counts(self.dtypes),
            "input layouts: " + _counts(self.layouts),
            "input values: " + _counts(self.boundary),
            "rejected candidates: " + (_counts(self.rejections) or "none"),
            f"time: {data['seconds']} s",
        ]
        return "\n".join(lines)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: -kv[1]))


def _special_kind(value: float | int) -> str:
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf"
        if value == 0.0:
            return "-0.0" if str(value).startswith("-") else "0.0"
        return "extreme-float"
    return "integer-limit"
