"""The row-selection kind (rewriter/kinds/graphbreaks/masked/row_selection.py) run, on what
its examples do not show: the traced graph, the cost bound and the gradient policy (traced
beyond them, the rewrite breaks exactly as the original), rows no round selects (a non-finite
value there does not leak), a write of another dtype, and the notes it leaves."""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source

# X-MOD's per-language adapters, with a float64 output the write casts into.
SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    class Adapter(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.down = nn.Linear(hidden, hidden // 2)
            self.act = nn.GELU()
            self.up = nn.Linear(hidden // 2, hidden)

        def forward(self, x):
            return self.up(self.act(self.down(x)))


    class Adapters(nn.Module):
        def __init__(self, hidden, languages, dtype=torch.float32):
            super().__init__()
            self.dtype = dtype
            self.adapters = nn.ModuleDict({k: Adapter(hidden) for k in languages})

        def forward(self, hidden_states: torch.Tensor, lang_ids: torch.Tensor):
            new_hidden_states = torch.zeros(hidden_states.shape, dtype=self.dtype)
            for index, key in enumerate(self.adapters.keys()):
                lang_mask = lang_ids == index
                selected = hidden_states[lang_mask]
                adapted = self.adapters[key](selected)
                new_hidden_states[lang_mask] = adapted
            return new_hidden_states
''')

RULES = [r for r in load_pack("graphbreaks").rules if r.id == "row-selection"]


def _rewritten() -> str:
    result = rewrite_source(SOURCE, RULES, RewriteOptions(scope=frozenset({"everywhere"})))
    assert "_eqrw_rows_where(" in result.text
    return result.text


def _pair(languages: int, dtype=torch.float32):
    modules = []
    for text in (SOURCE, _rewritten()):
        namespace: dict = {}
        exec(compile(text, "<module>", "exec"), namespace)
        torch.manual_seed(0)
        modules.append(namespace["Adapters"](8, [f"l{i}" for i in range(languages)], dtype))
    return modules


def _inputs(languages: int):
    torch.manual_seed(1)
    return torch.randn(6, 5, 8), torch.tensor([0, 2, 1, 0, 2, 1]) % languages


def _breaks(module, inputs) -> tuple[int, int]:
    torch._dynamo.reset()
    report = count_graph_breaks(module, inputs, backend="eager")
    return report.break_events, report.explain_breaks


def test_within_the_bound_the_loop_traces_whole_and_keeps_the_rows():
    original, rewritten = _pair(3)
    inputs = _inputs(3)
    with torch.no_grad():
        expected = original(*inputs)
        assert torch.equal(rewritten(*inputs), expected)  # eagerly the original statements
        assert _breaks(original, inputs) != (0, 0)
        assert _breaks(rewritten, inputs) == (0, 0)
        torch._dynamo.reset()
        compiled = torch.compile(rewritten, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(*inputs), expected)


@pytest.mark.parametrize("languages, grad", [(5, False), (3, True)])
def test_beyond_the_bound_or_with_gradients_it_breaks_as_the_original(languages, grad):
    original, rewritten = _pair(languages)
    inputs = _inputs(languages)
    with torch.set_grad_enabled(grad):
        assert _breaks(rewritten, inputs) == _breaks(original, inputs)
        torch._dynamo.reset()
        compiled = torch.compile(rewritten, backend="aot_eager")
        torch.testing.assert_close(compiled(*inputs), original(*inputs))


def test_rows_no_round_selects_stay_untouched_even_when_not_finite():
    original, rewritten = _pair(2)
    hidden, _ = _inputs(2)
    hidden[3] = float("inf")
    lang_ids = torch.tensor([0, 1, 0, 7, 1, 0])  # row 3: no adapter
    with torch.no_grad():
        expected = original(hidden, lang_ids)
        torch._dynamo.reset()
        got = torch.compile(rewritten, backend="aot_eager", fullgraph=True)(hidden, lang_ids)
    assert torch.equal(expected[3], torch.zeros_like(expected[3]))
    torch.testing.assert_close(got, expected)


def test_a_value_of_another_dtype_raises_as_the_original_write_does():
    original, rewritten = _pair(3, torch.float64)
    inputs = _inputs(3)
    with torch.no_grad():
        with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
            original(*inputs)
        torch._dynamo.reset()
        with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
            torch.compile(rewritten, backend="aot_eager")(*inputs)


def test_a_module_stored_from_outside_is_not_taken_row_wise():
    source = SOURCE.replace("nn.ModuleDict({k: Adapter(hidden) for k in languages})",
                            "nn.ModuleDict({k: make(hidden) for k in languages})")
    result = rewrite_source(source, RULES, RewriteOptions(scope=frozenset({"everywhere"})))
    assert result.text == source
    assert any("is not proven row-wise" in note.message for note in result.notes)


ONE_STATEMENT = textwrap.dedent('''
    import torch
    from torch import nn


    class TaskHeads(nn.Module):
        def __init__(self, width, tasks):
            super().__init__()
            self.heads = nn.ModuleList([nn.Linear(width, width) for _ in range(tasks)])

        def forward(self, x: torch.Tensor, task: torch.Tensor):
            out = x.clone()
            for t in range(len(self.heads)):
                out[task == t] = self.heads[t](x[task == t]).relu()
            return out
''')


@pytest.mark.parametrize("tasks", [3, 6])
def test_the_one_statement_form_traces_whole_within_the_bound_only(tasks):
    text = rewrite_source(ONE_STATEMENT, RULES, RewriteOptions()).text
    assert "_eqrw_rows_where(out, task == t, self.heads[t](x).relu())" in text
    modules = []
    for source in (ONE_STATEMENT, text):
        namespace: dict = {}
        exec(compile(source, "<module>", "exec"), namespace)
        torch.manual_seed(0)
        modules.append(namespace["TaskHeads"](8, tasks))
    original, rewritten = modules
    inputs = (torch.randn(7, 8), torch.tensor([0, 1, 2, 0, 1, 2, 9]))
    with torch.no_grad():
        expected = original(*inputs)
        assert torch.equal(rewritten(*inputs), expected)
        breaks = _breaks(rewritten, inputs)
        assert breaks == ((0, 0) if tasks <= 4 else _breaks(original, inputs))
        assert _breaks(original, inputs) != (0, 0)
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(rewritten, backend="aot_eager")(*inputs),
                                   expected)
