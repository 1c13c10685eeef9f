"""Run a generated program eagerly the way the oracle's worker does, to accept or reject it.

The oracle builds the target under ``torch.manual_seed``, calls ``.eval()`` on modules, makes
floating inputs require grad (retrying without when that makes the call fail), calls with
the same seed, drains returned iterators, and backpropagates a fixed projection of the
floating outputs. A program is valid when that succeeds twice with identical observations
(outputs, inputs after the call, module state, module-level data, printed text, gradients),
and when the backward pass, if there is one, succeeds: otherwise the oracle would call it an
``error`` or ``nondeterministic`` (or compare autograd's error messages), and the campaign
would learn nothing. Runs happen in the calling process; each run executes the source afresh as a
new module object, so module-level state starts over as it does in the oracle.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch

from ..judging.compare import CompareOptions, compare
from ..judging.observe import Printed, gradients, module_state, settle, to_plain, track_input_grads

RUN_SEED = 0  # the oracle's default seed


@dataclass(frozen=True)
class Verdict:
    """Whether a program is valid, and why not."""

    valid: bool
    reason: str = ""


def check(source: str, target: str) -> Verdict:
    """Run ``source``'s ``target`` twice as the oracle would; valid when both runs succeed
    and agree exactly (NaN signs and signed zeros included)."""
    first = _run(source, target)
    if isinstance(first, str):
        return Verdict(False, first)
    second = _run(source, target)
    if isinstance(second, str):
        return Verdict(False, second)
    differences = compare(first, second, CompareOptions(strict=True), path="run")
    if differences:
        return Verdict(False, f"nondeterministic: {differences[0].message}")
    grads = first.get("grads")
    if isinstance(grads, dict) and "backward_error" in grads:
        # The oracle compares this message verbatim, and autograd's (tensor versions,
        # node names) differs between eager and compiled: a false alarm for campaigns.
        return Verdict(False, f"backward: {grads['backward_error'][:200]}")
    return Verdict(True)


def _run(source: str, target: str) -> dict[str, Any] | str:
    """One observed run (with input gradients, else without), or the error text."""
    observed = _attempt(source, target, grad_inputs=True)
    if isinstance(observed, str):
        observed = _attempt(source, target, grad_inputs=False)
    return observed


def _attempt(source: str, target: str, grad_inputs: bool) -> dict[str, Any] | str:
    module = types.ModuleType("eqrewrite_generated")
    try:
        exec(compile(source, "<generated>", "exec"), module.__dict__)  # noqa: S102
        torch.manual_seed(RUN_SEED)
        fn = getattr(module, target)
        built = fn() if isinstance(fn, type) else None
        if built is not None:
            built.eval()
            fn = built
        torch.manual_seed(RUN_SEED)
        inputs = module.get_inputs()
        graded = track_input_grads(inputs) if grad_inputs else []
        torch.manual_seed(RUN_SEED)
        with Printed() as printed:
            output = settle(fn(*inputs))
        observed = {"output": to_plain(output), "inputs_after": to_plain(inputs),
                    "printed": printed.observed(), "module_state": module_state(module)}
        if built is not None:
            observed["state_after"] = to_plain(dict(built.state_dict()))
        observed["grads"] = gradients(output, built, graded)
        return observed
    except Exception as error:  # noqa: BLE001 - any failure makes the program invalid
        return f"{type(error).__name__}: {str(error)[:300]}"
