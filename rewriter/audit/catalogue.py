"""The graph-break patterns the audit knows, as data: what breaks, why, and what avoids it.

Each ``Pattern`` has a stable id (reports, baselines and SARIF ``ruleId``s use it), the
torch graph-break registry ids (``GB0170``...) Dynamo reports for it on torch 2.13, the
Dynamo settings that avoid the break without a rewrite (measured one by one, see
``/work/shared/FACTS.md`` and the tests), the rule kinds of the packs that target it, and
advice for what is left to a human. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """A Dynamo switch that avoids a break, and what it costs."""

    name: str          # torch._dynamo.config.<name>
    value: str         # as written in --dynamo-config / [tool.eqrewrite.oracle.dynamo]
    effect: str        # what the switch does to this break
    caveat: str = ""   # what changes besides the break

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "effect": self.effect,
                "caveat": self.caveat}


@dataclass(frozen=True)
class Pattern:
    """One kind of graph break the static audit finds."""

    id: str
    title: str
    help: str                               # why it breaks (Markdown, one paragraph)
    gb_ids: tuple[str, ...]                 # what Dynamo calls it (torch 2.13)
    settings: tuple[Setting, ...] = ()
    kinds: tuple[str, ...] = ()             # "kind" or "kind:option" of rules that fix it
    advice: str = ""                        # what a human can do

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "help": self.help,
                "gb_ids": list(self.gb_ids), "settings": [s.as_dict() for s in self.settings],
                "advice": self.advice}


SCALARS = Setting(
    "capture_scalar_outputs", "true",
    "keeps the Python number in the graph as a symbolic value",
    "later Python control flow on that number still breaks (data-dependent branching)")
DYNAMIC_SHAPES = Setting(
    "capture_dynamic_output_shape_ops", "true",
    "traces the operator with a symbolic, data-dependent output size",
    "the graph gets unbacked sizes; later code that branches on them still breaks")
REORDER = Setting(
    "reorderable_logging_functions", "print, warnings.warn",
    "Dynamo emits the call after the graph instead of breaking it",
    "output appears after the graph's computation; arguments must be tensors, numbers or "
    "strings, and a tensor changed in place later prints its new value")
IGNORE_LOGGER = Setting(
    "ignore_logger_methods", "Logger methods",
    "Dynamo drops the logger call inside compiled code",
    "the message is never logged when compiled")
NESTED = Setting(
    "nested_graph_breaks", "true",
    "a break inside a called function resumes in the caller's graph instead of splitting "
    "every frame on the stack",
    "experimental in torch 2.13")

PATTERNS: dict[str, Pattern] = {p.id: p for p in (
    Pattern(
        "data-dependent-branch", "Python branch on a tensor value",
        "`if`, `elif` or `a if c else b` on a tensor condition needs the tensor's value in "
        "Python, which the graph does not have: Dynamo ends the graph, runs the condition "
        "eagerly and starts a new one.",
        ("GB0170",), (), ("select",),
        "Compute both sides and pick with `torch.where(c, a, b)`, or use `torch.cond` for "
        "branches that call layers; move checks that only guard rare inputs out of "
        "`forward`."),
    Pattern(
        "data-dependent-loop", "Loop controlled by a tensor value",
        "`while <tensor condition>` decides every iteration from a tensor's value, so each "
        "iteration is a graph break (or the whole frame falls back to eager).",
        ("GB0170",), (), (),
        "Bound the loop by a Python number (a maximum iteration count) and mask the extra "
        "iterations with `torch.where`, or use `torch._higher_order_ops.while_loop`."),
    Pattern(
        "validation-raise", "`if <tensor condition>: raise`",
        "Input validation that raises on a tensor condition is data-dependent branching: "
        "the graph ends before the check.",
        ("GB0170",), (), ("guard:raise",),
        "Use `torch._check(...)` / `torch._assert_async(...)`, an `assert` statement "
        "(Dynamo traces asserts on tensors without a break), or validate inputs before "
        "calling the compiled model."),
    Pattern(
        "print", "`print` / `sys.stdout.write` in traced code",
        "Dynamo cannot put I/O into a graph: `print` is a builtin it refuses to trace.",
        ("GB0059", "GB0296"), (REORDER,), ("defer:print", "defer:stdio"),
        "Remove the print, guard it with `if not torch.compiler.is_compiling():`, or return "
        "the value and print it outside the compiled code."),
    Pattern(
        "logging", "Logger call in traced code",
        "`logger.warning(...)` (and Hugging Face's `warning_once`) are Python calls with "
        "side effects that Dynamo refuses to trace.",
        ("GB0291", "GB4841", "GB0007"), (IGNORE_LOGGER,), ("defer:logger",),
        "Log outside `forward` (at construction or in the caller), or guard the call with "
        "`if not torch.compiler.is_compiling():`."),
    Pattern(
        "warnings", "`warnings.warn` in traced code",
        "`warnings.warn` is a function Dynamo skips: the graph ends at the call.",
        ("GB0007",), (REORDER,), ("defer:warnings",),
        "Warn at construction or in the caller, or guard the call with "
        "`if not torch.compiler.is_compiling():`."),
    Pattern(
        "item", "Tensor to Python number (`.item()`, `int(t)`, `float(t)`, `bool(t)`)",
        "Turning a tensor into a Python number needs its value: without scalar capture "
        "Dynamo ends the graph there.",
        ("GB0124", "GB0033"), (SCALARS,), ("item_scalar",),
        "Keep the value a (0-d) tensor and use tensor arithmetic; if it feeds control flow, "
        "use `torch.where` / `torch.cond` on the tensor instead."),
    Pattern(
        "tolist", "`.tolist()` in traced code",
        "`.tolist()` of a floating tensor produces Python floats that Dynamo cannot keep "
        "symbolic, even with scalar capture.",
        ("GB0109", "GB0124"), (), (),
        "Keep the values in a tensor (index it, or use `unbind`) instead of a Python list."),
    Pattern(
        "numpy", "`.numpy()` in traced code",
        "Dynamo traces NumPy code through its NumPy interop, but a NumPy value that becomes "
        "a Python number (`float(a.sum())`) or leaves for non-NumPy code breaks the graph.",
        ("GB0033", "GB0124"), (SCALARS,), (),
        "Stay in torch (`torch.*` has the same functions), or move the NumPy code outside "
        "the compiled region."),
    Pattern(
        "nonzero", "`nonzero` / one-argument `torch.where` / `masked_select`",
        "The number of results depends on the data, so the output shape is unknown when "
        "tracing: a dynamic-shape operator.",
        ("GB0036",), (DYNAMIC_SHAPES,), ("masked_reduction",),
        "Reduce with a mask instead of selecting (`torch.where(mask, x, 0).sum()`), or pad "
        "to a fixed size with `nonzero_static(size=...)`."),
    Pattern(
        "boolean-mask", "Boolean-mask indexing `x[mask]`",
        "Selecting with a boolean mask gives a data-dependent number of elements: a "
        "dynamic-shape operator.",
        ("GB0036",), (DYNAMIC_SHAPES,),
        ("masked_reduction", "mask_scatter", "row_selection", "masked_cross_entropy"),
        "Keep the full shape: `torch.where(mask, x, 0)` followed by the reduction, or "
        "`x.masked_fill(~mask, value)`."),
    Pattern(
        "dynamic-shape", "Operator whose output size depends on the data",
        "`unique`, `repeat_interleave` with tensor repeats, `bincount`, or a size computed "
        "from a tensor (`torch.arange(n)` with `n` a tensor) make the output shape depend "
        "on values.",
        ("GB0036", "GB0033"), (DYNAMIC_SHAPES, SCALARS), (),
        "Use fixed-size forms (`torch.unique(..., sorted=True)` over a known range becomes a "
        "histogram with `minlength`; sizes from Python numbers), or move it out of the "
        "compiled region."),
    Pattern(
        "unsupported-call", "Call Dynamo cannot trace",
        "`open`, `input`, `breakpoint`, `copy.deepcopy` of tensors, `time.*`, `os.*`, "
        "`subprocess.*` and similar calls have effects outside the program, so Dynamo "
        "skips them and ends the graph.",
        ("GB0007", "GB0059", "GB0156", "GB4198"), (), (),
        "Do the call outside `forward`/the compiled function (at construction, or in the "
        "caller), or guard it with `if not torch.compiler.is_compiling():`."),
)}

# Which pattern a Dynamo break maps to when its source line cannot be matched to a finding.
GB_PATTERNS: dict[str, str] = {
    "GB0170": "data-dependent-branch", "GB0059": "print", "GB0296": "print",
    "GB0291": "logging", "GB4841": "logging", "GB0124": "item", "GB0109": "tolist",
    "GB0036": "nonzero", "GB0033": "dynamic-shape", "GB4198": "unsupported-call",
    "GB0156": "unsupported-call", "GB0007": "unsupported-call",
}

# Dynamo switches that the what-if runs try, and the breaks (GB ids) each may remove.
WHAT_IF: dict[str, tuple[str, ...]] = {
    "capture_scalar_outputs": ("GB0124", "GB0033", "GB0109"),
    "capture_dynamic_output_shape_ops": ("GB0036", "GB0033"),
    "ignore_logger_methods": ("GB0291", "GB4841", "GB0007"),
    "reorderable_logging_functions": ("GB0059", "GB0007", "GB0296"),
    "nested_graph_breaks": (),  # any break inside a called function
}


def pattern_for_kind(kind: str, options: dict[str, str]) -> list[str]:
    """The patterns a rule of this kind (with these options) targets."""
    keys = {kind, *(f"{kind}:{value}" for value in options.values())}
    return [p.id for p in PATTERNS.values() if keys & set(p.kinds)]
