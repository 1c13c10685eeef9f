"""Unannotated operands: rewritten by default with a run-time dispatch on their types.

The same rewritten module is called with tensors (it must compile whole and give the
original's outputs) and with Python numbers, lists and numpy arrays (it must behave exactly
as the original: same result, same printed text, same exception type and message).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import sys
import textwrap

import numpy as np
import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.api import RewriteOptions, load_pack, rewrite_text, select_rules

SOURCE = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Unannotated(nn.Module):
        def forward(self, x, threshold):
            print("input", x)
            scaled = x.clamp(0, 1) if x > threshold else x * 2
            if scaled < 0:
                out = scaled - 1
            else:
                out = scaled + 1
            if out != out:
                raise ValueError("NaN output")
            return out
''')

DEFAULT = RewriteOptions()
RULES = select_rules(load_pack("graphbreaks").rules, DEFAULT)


def load(text: str, name: str):
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module.Unannotated()


@pytest.fixture(scope="module")
def models():
    rewritten = rewrite_text(SOURCE, RULES, DEFAULT)
    rules = {edit.rule.id for _, edit in rewritten.edits}
    assert {"select-ternary", "select-assign", "guard-raise", "defer-print"} <= rules
    assert "_eqrw_select((x, threshold), x > threshold, lambda: x.clamp(0, 1), " \
           "lambda: (x * 2))" in rewritten.text
    return load(SOURCE, "dispatch_original"), load(rewritten.text, "dispatch_rewritten")


def outcome(model, *args):
    """(returned value or exception type and message, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = ("ok", model(*args))
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            result = ("error", type(error).__name__, str(error))
    return result, out.getvalue()


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return type(a) is type(b) and torch.equal(a, b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


NON_TENSORS = [
    (0.3, 0.5), (0.9, 0.5), (-3, 0), (2, 5), (float("nan"), 0.5),  # Python numbers
    ([0.3], 0.5), ([1, 2], [0, 1]),  # lists: compared, added, multiplied the Python way
    (np.float64(0.2), 0.5), (np.float64(0.9), 0.1),  # numpy scalars: no .clamp
    (np.array([0.2, 0.7]), 0.5), (np.array(0.25), 0.5),  # numpy arrays
]


@pytest.mark.parametrize("args", NON_TENSORS, ids=[repr(a) for a in NON_TENSORS])
def test_non_tensor_operands_behave_exactly_as_the_original(models, args):
    original, rewritten = models
    expected, printed = outcome(original, *args)
    got, got_printed = outcome(rewritten, *args)
    assert same(expected, got) and printed == got_printed, (expected, got)


@pytest.mark.parametrize("values", [(0.3, 0.5), (0.9, 0.5), (-2.0, -3.0)])
def test_tensor_operands_compile_whole_with_the_original_outputs(models, values):
    original, rewritten = models
    args = tuple(torch.tensor(v) for v in values)
    expected, printed = outcome(original, *args)
    assert same(expected, outcome(rewritten, *args)[0])
    torch._dynamo.reset()
    compiled = torch.compile(rewritten, backend="eager", fullgraph=True)
    got, got_printed = outcome(compiled, *args)
    assert same(expected, got) and printed == got_printed
    before = count_graph_breaks(original, args)
    after = count_graph_breaks(rewritten, args)
    assert before.breaks >= 2 and (after.graph_count, after.breaks) == (1, 0)
