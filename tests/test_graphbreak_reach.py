"""The graph-break pack's reach into `.tolist()` conditions, masked scatters and `continue`.

Each rewritten module runs compiled with ``fullgraph=True`` (no break left) against the
original run eagerly, and eagerly against the original with inputs that take the other
paths: Python values where the code allows them, and inputs that make the original raise
(the same exception and message must come out). The masked-scatter tests also check what
the rules' documentation claims about aliasing and gradients.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.api import RewriteOptions, load_pack, rewrite_text, select_rules

DEFAULT = RewriteOptions()
RULES = select_rules(load_pack("graphbreaks").rules, DEFAULT)
UNSAFE = RewriteOptions(unsafe=True)
UNSAFE_RULES = select_rules(load_pack("graphbreaks").rules, UNSAFE)


def rewrite(source: str, rules=RULES, options=DEFAULT):
    """``(rewritten text, ids of the rules that edited, notes)``."""
    result = rewrite_text(textwrap.dedent(source), rules, options)
    return result.text, {edit.rule.id for _, edit in result.edits}, result.notes


def load(text: str, name: str):
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def pair(source: str, tag: str, rules=RULES, options=DEFAULT):
    text, ids, notes = rewrite(source, rules, options)
    return load(textwrap.dedent(source), f"reach_{tag}_o"), load(text, f"reach_{tag}_r"), ids


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        return ("error", type(error).__name__, str(error))


def same_outcome(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a == b
    x, y = a[1], b[1]
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and torch.equal(x, y)
    return type(x) is type(y) and x == y


def fullgraph_equal(original, rewritten, *inputs) -> None:
    expected = original(*inputs)
    report = count_graph_breaks(rewritten, inputs, backend="eager")
    assert (report.graph_count, report.breaks, report.fullgraph_ok) == (1, 0, True), (
        report.reasons)
    torch._dynamo.reset()
    got = torch.compile(rewritten, backend="aot_eager", fullgraph=True)(*inputs)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


TOLIST = '''
    import torch
    class Gate(torch.nn.Module):
        def forward(self, x: torch.Tensor, pad: torch.Tensor):
            if x.sum().tolist() > 0:
                y = x * 2.0
            else:
                y = x * 0.5
            has_pad = pad.any().tolist()
            if has_pad:
                y = y.masked_fill(pad, 0.0)
            top = x.max().item()
            return y * 3.0 if top > 0.5 else y
'''


def test_tolist_conditions_become_tensor_conditions():
    text, ids, _ = rewrite(TOLIST)
    assert {"select-assign", "select-elseless", "select-ternary", "scalar-flag"} <= ids
    assert "_eqrw_compare(x.sum(), '>', 0)" in text
    assert "has_pad = _eqrw_item(pad.any())" in text and "top = _eqrw_item(x.max())" in text
    assert "_eqrw_truth(top, '>', 0.5)" in text and ".tolist()" not in text.split(
        "# end of eqrewrite helpers.")[1]
    original, rewritten, _ = pair(TOLIST, "tolist")
    for x in (torch.tensor([1.0, -3.0, 0.25]), torch.tensor([0.1, 0.2, 0.3]),
              torch.tensor([-1.0, -2.0, 3.5])):
        for pad in (torch.tensor([False, True, False]), torch.zeros(3, dtype=torch.bool)):
            gate, new = original.Gate(), rewritten.Gate()
            assert same_outcome(outcome(gate, x, pad), outcome(new, x, pad))
            torch._dynamo.reset()
            fullgraph_equal(gate, new, x, pad)


def test_tolist_name_with_other_uses_stays_a_python_value():
    source = '''
        import torch
        class Count(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                n = x.gt(0).sum().tolist()
                if n > 2:
                    x = x * 2.0
                return x, n
    '''
    text, ids, _ = rewrite(source)
    assert "n = x.gt(0).sum().tolist()" in text and "scalar-flag" not in ids
    original, rewritten, _ = pair(source, "tolist_other")
    x = torch.tensor([1.0, 2.0, 3.0, -1.0])
    expected, got = original.Count()(x), rewritten.Count()(x)
    assert type(got[1]) is int and got[1] == expected[1] == 3
    assert torch.equal(expected[0], got[0])


def test_tolist_not_proven_0d_is_noted():
    source = '''
        import torch
        class Rows(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                if x.sum(-1).tolist():
                    x = x * 2.0
                else:
                    x = x * 1.0
                return x
    '''
    text, ids, notes = rewrite(source)
    assert not ids
    assert any("`.tolist()` of a tensor not proven 0-d" in n.message for n in notes)


CONTINUE = '''
    import torch
    class Skip(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            total = torch.zeros(x.shape[1:])
            count = torch.zeros(())
            for chunk in x.unbind(0):
                s = chunk.sum()
                if s < 0:
                    continue
                total = total + chunk * 2.0
                count = count + 1
            return total, count
'''


def test_continue_rewritten_compiles_whole_and_keeps_eager_behaviour():
    text, ids, _ = rewrite(CONTINUE)
    assert ids == {"skip-continue"}
    assert "continue" not in text.split("# end of eqrewrite helpers.")[1]
    original, rewritten, _ = pair(CONTINUE, "continue")
    x = torch.tensor([[1.0, 2.0], [-5.0, 1.0], [0.5, 0.5], [-1.0, -1.0]])
    expected = original.Skip()(x)
    assert all(torch.equal(a, b) for a, b in zip(expected, rewritten.Skip()(x)))
    assert expected[1].item() == 2.0  # two chunks were skipped: both paths are exercised
    report = count_graph_breaks(rewritten.Skip(), (x,), backend="eager")
    assert (report.graph_count, report.breaks, report.fullgraph_ok) == (1, 0, True)
    torch._dynamo.reset()
    got = torch.compile(rewritten.Skip(), backend="aot_eager", fullgraph=True)(x)
    assert all(torch.equal(a, b) for a, b in zip(expected, got))


def test_continue_condition_errors_like_the_original():
    source = '''
        import torch
        class Skip(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                total = torch.zeros(x.shape[1:])
                for chunk in x.unbind(0):
                    if chunk > 0:
                        continue
                    total = total + chunk
                return total
    '''
    original, rewritten, ids = pair(source, "continue_error")
    assert ids == {"skip-continue"}
    several = torch.tensor([[1.0, -1.0], [2.0, 3.0]])  # bool() of a 2-element chunk raises
    first, second = outcome(original.Skip(), several), outcome(rewritten.Skip(), several)
    assert first[0] == "error" and first == second
    single = torch.tensor([[1.0], [-2.0], [3.0]])
    assert same_outcome(outcome(original.Skip(), single), outcome(rewritten.Skip(), single))


def test_continue_update_runs_only_when_the_original_ran_it():
    """Eagerly the update is a thunk: an update that would fail on a skipped iteration (a
    shape that does not broadcast) must not run, exactly as in the original."""
    source = '''
        import torch
        class Skip(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                total = torch.zeros(3)
                for chunk in x.split(3):
                    if chunk.numel() < 3:
                        continue
                    total = total + chunk
                return total
    '''
    # numel() < 2 is a Python bool, not data-dependent: nothing to rewrite.
    assert rewrite(source)[1] == set()
    source = source.replace("if chunk.numel() < 3:",
                            "if (chunk.sum() > 100) | (chunk.numel() < 3):")
    original, rewritten, ids = pair(source, "continue_thunk")
    assert ids == {"skip-continue"}
    x = torch.arange(5.0)  # the last chunk has 2 elements: added to 3 it would raise
    assert torch.equal(original.Skip()(x), rewritten.Skip()(x))
    with pytest.raises(RuntimeError):
        torch.zeros(3) + x[3:]  # what evaluating the update on the skipped chunk would do


def test_continue_with_side_effect_or_break_is_noted():
    source = '''
        import torch
        class Keep(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                total = torch.zeros(())
                for chunk in x.split(2):
                    if chunk.sum() < 0:
                        continue
                    print(chunk)
                    total = total + chunk.sum()
                return total
    '''
    _, ids, notes = rewrite(source)
    assert "skip-continue" not in ids
    assert any("data-dependent `continue` left as it is" in n.message for n in notes)


SCATTER = '''
    import torch
    class Scatter(torch.nn.Module):
        def forward(self, x: torch.Tensor, out: torch.Tensor):
            mask = x > 0
            out[mask] = x[mask].clamp(0.0, 1.0) * 0.5 - 1.0
            return out
'''


def test_mask_scatter_writes_in_place_through_aliases():
    original, rewritten, ids = pair(SCATTER, "scatter")
    assert ids == {"mask-scatter"}
    x = torch.tensor([[0.5, -1.0, 3.0], [-0.5, 0.25, 0.0]])
    expected_base = torch.full((2, 4), 7.0)
    original.Scatter()(x, expected_base[:, :3])
    base = torch.full((2, 4), 7.0)
    torch._dynamo.reset()
    compiled = torch.compile(rewritten.Scatter(), backend="aot_eager", fullgraph=True)
    compiled(x, base[:, :3])  # a view: the write must reach the base, as index_put_ does
    assert torch.equal(base, expected_base)
    eager_base = torch.full((2, 4), 7.0)
    rewritten.Scatter()(x, eager_base[:, :3])
    assert torch.equal(eager_base, expected_base)


def test_mask_scatter_gradients_exact_even_at_inf_and_nan():
    source = '''
        import torch
        class Scatter(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                out = torch.zeros_like(x)
                keep = x.abs() < 10.0
                out[keep] = x[keep] * 3.0 + 1.0
                return out
    '''
    original, rewritten, ids = pair(source, "scatter_grad")
    assert ids == {"mask-scatter"}
    grads = []
    for module, compile_it in ((original, False), (rewritten, True)):
        x = torch.tensor([1.0, float("inf"), float("nan"), -2.0], requires_grad=True)
        fn = module.Scatter()
        if compile_it:
            torch._dynamo.reset()
            fn = torch.compile(fn, backend="aot_eager", fullgraph=True)
        fn(x).sum().backward()
        grads.append(x.grad)
    assert torch.equal(grads[0], grads[1]) and torch.equal(grads[0], torch.tensor(
        [3.0, 0.0, 0.0, 3.0]))


def test_pointwise_scatter_only_unsafe_and_its_gradient_difference():
    source = '''
        import torch
        class Root(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                out = torch.zeros_like(x)
                pos = x > 0
                out[pos] = x[pos].sqrt()
                return out
    '''
    _, ids, notes = rewrite(source)
    assert not ids and any("elementwise" in n.message for n in notes)
    original, rewritten, ids = pair(source, "scatter_unsafe", UNSAFE_RULES, UNSAFE)
    assert ids == {"mask-scatter-pointwise"}
    grads, values = [], []
    for module, compile_it in ((original, False), (rewritten, True)):
        x = torch.tensor([4.0, -1.0, 0.0], requires_grad=True)
        fn = module.Root()
        if compile_it:
            torch._dynamo.reset()
            fn = torch.compile(fn, backend="aot_eager", fullgraph=True)
        out = fn(x)
        out.sum().backward()
        values.append(out.detach())
        grads.append(x.grad)
    assert torch.equal(values[0], values[1])  # values exact, as the safety note says
    assert torch.equal(grads[0], torch.tensor([0.25, 0.0, 0.0]))
    assert grads[1][0] == 0.25 and grads[1][1:].isnan().all()  # the documented difference


@pytest.mark.parametrize("value", ["x[mask].softmax(-1)", "x[mask] @ x[mask]",
                                   "x[mask].sum()", "x[mask] * y"])
def test_mask_scatter_leaves_non_elementwise_values(value):
    source = f'''
        import torch
        class Scatter(torch.nn.Module):
            def forward(self, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor):
                mask = x > 0
                out[mask] = {value}
                return out
    '''
    for rules, options in ((RULES, DEFAULT), (UNSAFE_RULES, UNSAFE)):
        assert not ({"mask-scatter", "mask-scatter-pointwise"} & rewrite(source, rules,
                                                                          options)[1])


def test_mask_scatter_falls_back_when_shapes_differ():
    """A row mask on a matrix whose value reads a tensor of another shape: traced, the
    helper's checks fail and the original statement runs (compiled with breaks allowed)."""
    source = '''
        import torch
        class Rows(torch.nn.Module):
            def forward(self, x: torch.Tensor, small: torch.Tensor, out: torch.Tensor):
                mask = small > 0
                out[mask] = small[mask] + 1.0
                return out
    '''
    original, rewritten, ids = pair(source, "scatter_fallback")
    assert ids == {"mask-scatter"}
    small = torch.tensor([1.0, -1.0, 2.0])
    expected = original.Rows()(None, small, torch.zeros(3))
    torch._dynamo.reset()
    got = torch.compile(rewritten.Rows(), backend="aot_eager")(None, small, torch.zeros(3))
    assert torch.equal(expected, got)
    failing = outcome(original.Rows(), None, small, torch.zeros(2))
    assert failing[0] == "error" and failing == outcome(rewritten.Rows(), None, small,
                                                        torch.zeros(2))


@pytest.mark.parametrize("statements", [
    "idx = mask.nonzero(as_tuple=True)\n        out[idx] = x[idx] * 2.0",
    "y = x[mask]\n        out[mask] = y * 2.0",
])
def test_selection_in_an_earlier_statement_is_noted(statements):
    source = f'''
import torch
class Scatter(torch.nn.Module):
    def forward(self, x: torch.Tensor, out: torch.Tensor):
        mask = x > 0
        {statements}
        return out
'''
    _, ids, notes = rewrite(source)
    assert "mask-scatter" not in ids
    assert any("taken in an earlier statement" in n.message for n in notes)


@pytest.mark.parametrize("index", ["mask", "(mask,)", "torch.nonzero(mask, as_tuple=True)",
                                   "mask.nonzero(as_tuple=True)", "torch.where(mask)"])
def test_mask_scatter_index_spellings(index):
    source = f'''
import torch
class Scatter(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        mask = x > 0
        out = y.clone()
        out[{index}] = -x[{index}] + y[{index}] * 2.0
        out.index_put_({index}, out[{index}] - 1)
        return out
'''
    original, rewritten, ids = pair(source, "scatter_spelling")
    x, y = torch.tensor([[1.0, -2.0], [0.5, 0.0]]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])
    first = outcome(original.Scatter(), x, y)
    assert same_outcome(first, outcome(rewritten.Scatter(), x, y))
    if index == "mask":  # index_put_ wants a tuple: the original raises, so it stays as is
        assert first[:2] == ("error", "TypeError") and "out.index_put_(mask" in rewrite(
            source)[0]
        return
    assert ids == {"mask-scatter"}
    torch._dynamo.reset()
    fullgraph_equal(original.Scatter(), rewritten.Scatter(), x, y)
