"""Small unannotated modules, as a new user writes them, fixed by the default command.

Each module has one graph break that a proof finds only with its unannotated parameters taken
as tensors. The rewritten module, called with tensors, must compile into one graph with the
original's outputs and gradients; called with Python numbers, lists and numpy arrays, it must
behave exactly as the original (same result, printed text, exception type and message), with
one branch evaluated. Negative cases, where a tensor and a Python value would part ways on the
rewritten path, must stay as they are.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from types import ModuleType

import numpy as np
import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.api import rewrite_text
from test_dispatch import DEFAULT, RULES, outcome, same

SOURCE = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class SignGate(nn.Module):
        def forward(self, x):
            s = x.sum()
            y = x * 2
            if s > 0:
                return y
            else:
                return -y


    class MeanShift(nn.Module):
        def forward(self, x, bias):
            m = x.mean()
            shifted = x - m
            if m > bias:
                out = shifted * 0.5
            else:
                out = shifted + bias
            return out


    class Router(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.small = nn.Linear(4, 4)
            self.large = nn.Linear(4, 4)

        def forward(self, x):
            if x.mean() > 0.5:
                return self.large(x)
            else:
                return self.small(x)


    class ExpBranch(nn.Module):
        def forward(self, x):
            if x.max() > 1:
                y = x.exp()
            else:
                y = x.sigmoid()
            return y


    class MaxNormalize(nn.Module):
        def forward(self, x):
            scale = x.abs().max().item()
            return x / scale


    class PeakNormalize(nn.Module):
        def forward(self, x, bias):
            peak = x.max().item()
            return (x - bias) / (peak + 1)


    class PositiveSum(nn.Module):
        def forward(self, x):
            return x[x > 0].sum()


    class MaskedMean(nn.Module):
        def forward(self, x, mask):
            return x[mask].mean()


    class LeakyFix(nn.Module):
        def forward(self, x):
            out = x * 1.0
            out[x < 0] = x[x < 0] * 0.1
            return out


    class MeanThreshold(nn.Module):
        def forward(self, x):
            if x.mean().item() > 0:
                y = x * 2
            else:
                y = x * 0.5
            return y


    class PeakHalve(nn.Module):
        def forward(self, x):
            peak = x.max().item()
            if peak > 1.0:
                return x / 2
            else:
                return x


    class RowGate(nn.Module):
        def forward(self, x):
            out = []
            for row in x:
                if row.sum() > 0:
                    y = row * 2
                else:
                    y = row - 1
                out.append(y)
            return sum(out)


    class NotGate(nn.Module):
        def forward(self, x):
            return x * 2 if not x > 0 else x


    class BothGate(nn.Module):
        def forward(self, x):
            if x.sum() > 0 and x.max() < 5:
                return x * 2
            else:
                return x


    class ListGate(nn.Module):
        def forward(self, x):
            if x.sum().tolist() > 0:
                return x * 2
            else:
                return x


    class CountScale(nn.Module):
        def forward(self, x):
            return x / x[x > 0].numel()


    class IndexSum(nn.Module):
        def forward(self, x, i):
            return x[i].sum()


    class ItemEscapes(nn.Module):
        def forward(self, x):
            scale = x.max().item()
            return x / scale, scale
''')

# Each fixed module, the helper call its rewrite shows, and tensor arguments for it.
FIXED = {
    "SignGate": ("_eqrw_select((x,), s > 0, lambda: y, lambda: (-y))",
                 [(torch.tensor([1.0, -0.5, 2.0]),), (torch.tensor([-1.0, 0.5]),)]),
    "MeanShift": ("_eqrw_select((x, bias), m > bias,",
                  [(torch.tensor([1.0, 3.0]), torch.tensor(0.5)),
                   (torch.tensor([1.0, -3.0]), torch.tensor(0.5))]),
    "Router": ("_eqrw_select_cond((x,), x.mean() > 0.5, lambda x: self.large(x),",
               [(torch.full((2, 4), 0.9),), (torch.full((2, 4), 0.1),)]),
    "ExpBranch": ("_eqrw_select_cond((x,), x.max() > 1, lambda x: x.exp(), "
                  "lambda x: x.sigmoid(), (x,))",
                  [(torch.tensor([0.5, 2.0]),), (torch.tensor([0.5, -2.0]),)]),
    "MaxNormalize": ("scale = _eqrw_item(x.abs().max(), (x,))",
                     [(torch.tensor([0.5, -4.0, 2.0]),)]),
    "PeakNormalize": ("peak = _eqrw_item(x.max(), (x, bias))",
                      [(torch.tensor([0.5, -4.0, 2.0]), torch.tensor(0.25))]),
    "PositiveSum": ("_eqrw_masked(x, x > 0, 'sum')",
                    [(torch.tensor([0.5, -4.0, 2.0]),), (torch.tensor([-1.0]),)]),
    "MaskedMean": ("_eqrw_masked(x, mask, 'mean')",
                   [(torch.tensor([0.5, -4.0, 2.0]), torch.tensor([True, False, True]))]),
    "LeakyFix": ("_eqrw_mask_scatter(out, lambda: (x < 0), x < 0,",
                 [(torch.tensor([0.5, -4.0, 2.0]),)]),
    "MeanThreshold": ("_eqrw_select((x,), _eqrw_compare(x.mean(), '>', 0),",
                      [(torch.tensor([1.0, 2.0]),), (torch.tensor([-1.0, 0.5]),)]),
    "PeakHalve": ("_eqrw_select((x,), _eqrw_truth(peak, '>', 1.0), lambda: (x / 2), lambda: x)",
                  [(torch.tensor([3.0, 2.0]),), (torch.tensor([0.5, -1.0]),)]),
    "RowGate": ("_eqrw_select((x,), row.sum() > 0, lambda: (row * 2), lambda: (row - 1))",
                [(torch.tensor([[1.0, -2.0], [0.5, 0.25]]),)]),
}
UNCHANGED = ["NotGate", "BothGate", "ListGate", "CountScale", "IndexSum", "ItemEscapes"]

# Python numbers, lists and numpy values: the rewritten module must behave as the original.
NUMBERS = [(2.0,), (-3,), ([1.0, -2.0],), (np.float64(0.7),), (np.float64(-1.5),),
           (np.array([0.5, 2.0]),), (np.array([-0.5, 0.25]),), (np.array([-1.0, 3.0]),)]
NON_TENSORS = {
    "SignGate": NUMBERS,
    "MeanShift": [(np.array([1.0, 3.0]), 0.5), (np.array([1.0, -3.0]), 2), (2.0, 0.5),
                  ([1.0, 2.0], 0.5)],
    "Router": NUMBERS,
    "ExpBranch": NUMBERS,
    "MaxNormalize": NUMBERS,
    "PeakNormalize": [(np.array([0.5, -4.0, 2.0]), 0.25), (np.array([1, 2]), 1), (2.0, 0.5),
                      ([1.0, 2.0], 0.5), (np.array([-1.0]), np.array([0.5]))],
    "PositiveSum": NUMBERS,
    "MaskedMean": [(np.array([0.5, -4.0]), np.array([True, False])),
                   (np.array([0.5, -4.0]), np.array([False, False])), ([1.0], [True]),
                   (2.0, True)],
    "LeakyFix": NUMBERS,
    "MeanThreshold": NUMBERS,
    "PeakHalve": NUMBERS,
    "RowGate": NUMBERS + [(np.array([[1.0, -2.0], [0.5, 0.25]]),), ([[1.0], [2.0]],)],
}
CASES = [(name, args) for name, cases in NON_TENSORS.items() for args in cases]


@pytest.fixture(scope="module")
def rewritten():
    result = rewrite_text(SOURCE, RULES, DEFAULT)
    return (load_all(SOURCE, "unannotated_original"),
            load_all(result.text, "unannotated_rewritten"), result.text)


def load_all(text: str, name: str) -> ModuleType:
    """The module ``text`` defines, importable by ``name`` (Dynamo looks modules up)."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def forward_source(text: str, name: str) -> str:
    """The source text of class ``name`` in ``text``."""
    tree = ast.parse(text)
    return next(str(ast.get_source_segment(text, n)) for n in tree.body
                if isinstance(n, ast.ClassDef) and n.name == name)


@pytest.mark.parametrize("name", FIXED)
def test_the_default_command_rewrites_with_a_run_time_dispatch(rewritten, name):
    assert FIXED[name][0] in forward_source(rewritten[2], name)


@pytest.mark.parametrize("name", UNCHANGED)
def test_uses_where_a_tensor_and_a_python_value_differ_stay(rewritten, name):
    assert forward_source(rewritten[2], name) == forward_source(SOURCE, name)


@pytest.mark.parametrize(("name", "args"), CASES, ids=[f"{n}-{a!r}" for n, a in CASES])
def test_non_tensor_operands_behave_exactly_as_the_original(rewritten, name, args):
    original, new, _ = rewritten
    expected = outcome(getattr(original, name)(), *args)
    got = outcome(getattr(new, name)(), *args)
    assert same(expected[0], got[0]) and expected[1] == got[1], (expected, got)


def run(model, args):
    """Outputs and the gradients of the inputs and parameters, after a backward pass."""
    inputs = tuple(a.clone().requires_grad_(a.is_floating_point()) for a in args)
    model.zero_grad(set_to_none=True)
    output = model(*inputs)
    output.sum().backward()
    grads = [a.grad for a in inputs] + [p.grad for p in model.parameters()]
    return output.detach(), grads


@pytest.mark.parametrize("name", FIXED)
def test_tensor_operands_compile_whole_with_the_original_outputs(rewritten, name):
    original, new, _ = rewritten
    for args in FIXED[name][1]:
        expected, expected_grads = run(getattr(original, name)(), args)
        model = getattr(new, name)()
        assert same(expected, run(model, args)[0])  # eagerly: the original code
        before, after = (count_graph_breaks(getattr(m, name)(), args) for m in (original, new))
        assert before.breaks >= 1 and (after.graph_count, after.breaks) == (1, 0)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="eager", fullgraph=True)
        got, grads = run(compiled, args)
        torch.testing.assert_close(got, expected)
        assert len(grads) == len(expected_grads)
        params = list(model.parameters())
        for grad, expected_grad, source in zip(grads, expected_grads, [*args, *params]):
            # What only the untaken branch reads has no gradient in the original and a
            # zero one through torch.where / torch.cond (as for annotated selects).
            zero = torch.zeros_like(source, dtype=torch.float32)
            torch.testing.assert_close(zero if grad is None else grad,
                                       zero if expected_grad is None else expected_grad)
