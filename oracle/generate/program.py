"""A generated program: drafting it statement by statement, choosing outputs, rendering the
file, and the accept/regenerate loop that makes ``generate(seed)`` return only valid ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from .builder import Builder, Draft
from .compiling import MODES, VARIED, compile_settings
from .execute import check
from .features import FEATURES
from .inputs import InputSpec, InputSpecRecord, draw_input, draw_scalar, draw_shape, related_shape
from .inputs import render_get_inputs as _render_get_inputs
from .table import OpTable, default_table

MODULE_TARGET, FUNCTION_TARGET = "Program", "program"


# A program's focus: an op tag whose ops are drawn FOCUS_BOOST times more often. Without it
# ops with narrow subjects (4-D floating inputs for pooling, interpolation, convolution)
# would be rare; spatial foci also make the first input 3-D or 4-D and floating.
FOCI = ("interpolation", "pooling", "convolution", "attention", "matmul", "indexing",
        "duplicate-indices", "reduction", "scan", "layout", "view", "mixed-dtypes",
        "overflow", "normalisation", "padding", "bool-result", "index-result")
SPATIAL = frozenset({"interpolation", "pooling", "convolution", "attention", "padding"})
FOCUS_BOOST = 12.0


class GenerationError(RuntimeError):
    """No valid program for a seed within the configured number of attempts."""


@dataclass(frozen=True)
class GenConfig:
    """What programs look like. Part of determinism: the same seed and config give the same
    program, byte for byte.

    ``features`` overrides feature weights (``{"data-branch": 0}`` disables one, see
    ``features.FEATURES``); ``ops`` restricts the op table to some ids; ``strict`` adds
    ``strict=true`` to every header (signs of zero and NaN compared); ``generator_outputs``
    lets programs return a generator (a known Dynamo bug, #198190, off by default so
    campaigns are not flooded by it); ``compile_settings`` is ``"varied"`` (each seed's
    header says how it is compiled, see ``compiling.py``) or ``"fixed"`` (no such settings:
    the programs of releases before the variation, byte for byte).
    """

    statements: tuple[int, int] = (5, 12)
    inputs: tuple[int, int] = (1, 3)
    boundary: float = 0.35
    features: tuple[tuple[str, float], ...] = ()
    ops: frozenset[str] | None = None
    strict: bool = False
    generator_outputs: bool = False
    compile_settings: str = VARIED
    max_attempts: int = 25
    table: OpTable = field(default_factory=default_table, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.compile_settings not in MODES:
            raise ValueError(f"compile_settings must be one of {', '.join(MODES)}, "
                             f"got {self.compile_settings!r}")

    def weights(self) -> dict[str, float]:
        """Feature weights after overrides (unknown names are an error)."""
        overrides = dict(self.features)
        unknown = sorted(set(overrides) - set(FEATURES))
        if unknown:
            raise ValueError(f"unknown features {unknown} (known: {sorted(FEATURES)})")
        return {name: overrides.get(name, weight) for name, (_, weight) in FEATURES.items()}


class StatementCounts(TypedDict):
    tried: int
    kept: int


class ProgramRecord(TypedDict):
    """A program as ``eqrewrite gen``'s manifest lists it (``Program.metadata``)."""

    seed: int
    file: str
    target: str
    focus: str | None
    ops: dict[str, int]
    features: list[str]
    inputs: list[InputSpecRecord]
    settings: dict[str, object]     # the header's
    attempts: int
    statements: StatementCounts
    rejected: list[str]


@dataclass(frozen=True)
class Program:
    """A valid generated program and what it contains."""

    seed: int
    source: str
    target: str                       # "Program" (an nn.Module) or "program" (a function)
    focus: str | None                 # the op tag the program leans on (see FOCI)
    ops: dict[str, int]               # op id -> uses, sorted by id
    features: tuple[str, ...]         # sorted feature tags
    inputs: tuple[InputSpec, ...]
    settings: dict[str, Any]          # the header's settings
    attempts: int                     # candidates drafted (1: the first was valid)
    statements_tried: int
    statements_kept: int
    rejected: tuple[str, ...] = ()    # why earlier candidates were rejected

    @property
    def filename(self) -> str:
        return f"gen_{self.seed:06d}.py"

    def write(self, folder: Path) -> Path:
        """Write the program into ``folder`` (created if needed); returns its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.filename
        path.write_text(self.source, encoding="utf-8")
        return path

    def metadata(self) -> ProgramRecord:
        """A JSON-ready summary (what a campaign records per program)."""
        return {"seed": self.seed, "file": self.filename, "target": self.target,
                "focus": self.focus, "ops": self.ops, "features": list(self.features),
                "inputs": [spec.to_dict() for spec in self.inputs],
                "settings": self.settings, "attempts": self.attempts,
                "statements": {"tried": self.statements_tried, "kept": self.statements_kept},
                "rejected": list(self.rejected)}


def generate(seed: int, config: GenConfig | None = None) -> Program:
    """The valid program for ``seed``: candidates are drafted from ``Random(seed, attempt)``
    and run eagerly as the oracle would; the first valid one is returned."""
    config = config or GenConfig()
    rejected = []
    for attempt in range(config.max_attempts):
        rng = random.Random(f"eqrewrite-gen/{seed}/{attempt}")
        builder = draft(rng, seed, config)
        if builder is None:
            rejected.append("no statement could be kept")
            continue
        source, target = render(builder.draft, seed, config, rng)
        verdict = check(source, target)
        if verdict.valid:
            return _program(seed, source, target, builder, config, attempt + 1, rejected)
        rejected.append(verdict.reason)
    raise GenerationError(f"seed {seed}: no valid program in {config.max_attempts} attempts "
                          f"(last: {rejected[-1]})")


def draft(rng: random.Random, seed: int, config: GenConfig) -> Builder | None:
    """Build one candidate by running statements; None when nothing could be kept."""
    focus = rng.choice(FOCI + (None,) * 3)
    inputs = _draw_inputs(rng, config, focus)
    builder = Builder(rng, config.table, inputs, seed % 2**63, config.ops, focus,
                      FOCUS_BOOST)
    for spec in inputs:
        if spec.is_tensor:
            builder.register_input(spec.name)
    weights = config.weights()
    names = [n for n in weights if weights[n] > 0]
    goal = rng.randint(*config.statements)
    for _ in range(goal * 6):
        if builder.kept >= goal:
            break
        feature = rng.choices(names, [weights[n] for n in names])[0]
        FEATURES[feature][0](builder)
    if not any(info.origin == "local" for info in builder.pool.values()):
        return None
    builder.draft.outputs = _outputs(builder, config)
    return builder


def _draw_inputs(rng: random.Random, config: GenConfig,
                 focus: str | None) -> list[InputSpec]:
    count = rng.randint(*config.inputs)
    spatial = focus in SPATIAL
    first = draw_shape(rng, rng.choice((3, 4, 4)) if spatial else None)
    dtype = rng.choice(("float32", "float32", "float64")) if spatial else None
    specs = [draw_input(rng, "x0", first, config.boundary, dtype)]
    for index in range(1, count):
        specs.append(draw_input(rng, f"x{index}", related_shape(rng, first), config.boundary))
    if rng.random() < 0.15:
        specs.append(draw_scalar(rng, f"x{count}"))
    return specs


def _outputs(builder: Builder, config: GenConfig) -> str:
    """The return expression: the newest value plus values nothing else read."""
    rng = builder.rng
    local = sorted((i for i in builder.pool.values() if i.origin == "local"),
                   key=lambda i: (i.born, i.name))
    newest = local[-1].name
    unread = [i.name for i in local[:-1] if i.name not in builder.consumed]
    names = [newest] + rng.sample(unread, min(len(unread), rng.randint(1, 3)))
    if builder.scalars and rng.random() < 0.2:
        names.append(rng.choice(sorted(builder.scalars)))
    form = rng.random()
    if len(names) == 1:
        return f"{{'out': {newest}}}" if form < 0.1 else newest
    if config.generator_outputs and form < 0.05:
        return f"(t for t in ({', '.join(names)},))"
    if form < 0.2:
        keys = rng.sample(["logits", "aux", "b", "a", "state"], len(names))
        return "{" + ", ".join(f"{k!r}: {n}" for k, n in zip(keys, names)) + "}"
    if form < 0.35:
        return "[" + ", ".join(names) + "]"
    return ", ".join(names)


def render(draft: Draft, seed: int, config: GenConfig,
           rng: random.Random) -> tuple[str, str]:
    """The program's source text and its target's name."""
    body_text = "\n".join(line for stmt in draft.body for line in stmt.lines)
    as_module = (draft.uses_self or bool(draft.init_lines) or "self." in body_text
                 or rng.random() < 0.6)
    target = MODULE_TARGET if as_module else FUNCTION_TARGET
    settings = _settings(draft, seed, config)
    lines = _docstring(draft, seed) + _header(settings) + _imports(draft, body_text)
    lines += [""] + draft.module_lines + ([""] if draft.module_lines else [])
    lines += [""] + (_module(draft) if as_module else _function(draft))
    lines += ["", ""] + _render_get_inputs(draft.inputs, draft.input_seed)
    return "\n".join(lines) + "\n", target


def _docstring(draft: Draft, seed: int) -> list[str]:
    ops = ", ".join(sorted(draft.ops)) or "none"
    features = ", ".join(sorted(draft.features)) or "none"
    lines = [f'"""Generated by eqrewrite gen, seed {seed}.', "", f"Ops: {ops}",
             f"Features: {features}", "Inputs:"]
    lines += [f"    {spec.describe()}" for spec in draft.inputs]
    return [_wrap(line) for line in lines] + ['"""']


def _wrap(line: str, width: int = 96) -> str:
    if len(line) <= width:
        return line
    words, out, current = line.split(" "), [], ""
    for word in words:
        if current and len(current) + len(word) + 1 > width:
            out.append(current)
            current = "    " + word
        else:
            current = f"{current} {word}" if current else word
    return "\n".join(out + [current])


def _settings(draft: Draft, seed: int, config: GenConfig) -> dict[str, Any]:
    """The header's settings: how the seed is compiled, then what the program's ops need
    (which win: ``inductor.fallback_random`` for random draws), then ``strict``."""
    settings = compile_settings(seed, config.compile_settings) | draft.settings
    return dict(sorted(settings.items())) | ({"strict": True} if config.strict else {})


def _header(settings: dict[str, Any]) -> list[str]:
    if not settings:
        return []
    pairs = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in settings.items())
    return [f"# eqrewrite-oracle: {pairs}"]


def _imports(draft: Draft, body_text: str) -> list[str]:
    lines = ["import torch"]
    every = body_text + "\n".join(draft.init_lines)
    if "partial(" in every:
        lines.insert(0, "from functools import partial")
        lines.insert(1, "")
    if "F." in every:
        lines.append("import torch.nn.functional as F")
    lines.append("from torch import nn")
    return lines


def _signature(draft: Draft) -> str:
    params = [f"{s.name}: torch.Tensor" if s.is_tensor else f"{s.name}: {s.dtype}"
              for s in draft.inputs]
    return ", ".join(params)


def _body(draft: Draft) -> list[str]:
    lines = [f"global {', '.join(sorted(draft.global_names))}"] if draft.global_names else []
    lines += [line for stmt in draft.body for line in stmt.lines]
    return lines + [f"return {draft.outputs}"]


def _module(draft: Draft) -> list[str]:
    init = ["super().__init__()"] + draft.init_lines
    lines = [f"class {MODULE_TARGET}(nn.Module):", "    def __init__(self):"]
    lines += [f"        {line}" for line in init]
    lines += ["", f"    def forward(self, {_signature(draft)}):"]
    return lines + [f"        {line}" for line in _body(draft)]


def _function(draft: Draft) -> list[str]:
    lines = [f"def {FUNCTION_TARGET}({_signature(draft)}):"]
    return lines + [f"    {line}" for line in _body(draft)]


def _program(seed: int, source: str, target: str, builder: Builder, config: GenConfig,
             attempts: int, rejected: list[str]) -> Program:
    draft = builder.draft
    return Program(seed, source, target, builder.focus, dict(sorted(draft.ops.items())),
                   tuple(sorted(draft.features)), tuple(draft.inputs),
                   _settings(draft, seed, config), attempts,
                   builder.tried, builder.kept, tuple(rejected))
