"""The mixture-of-experts kind (rewriter/kinds/graphbreaks/moe_dispatch.py) on what its
examples do not show: the gradient policy of the safe and the training rule, a token routed
twice to one expert, a non-finite expert output at an unrouted token, and the notes it
leaves."""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))

# The transformers 5.x form: 3-D expert weights, a sentinel class, unwrapped nonzero rows.
SOURCE = textwrap.dedent('''
    import torch
    import torch.nn.functional as F


    class Experts(torch.nn.Module):
        def __init__(self, experts=4, hidden=4):
            super().__init__()
            self.num_experts = experts
            self.up = torch.nn.Parameter(torch.randn(experts, hidden, hidden))

        def forward(self, hidden_states, top_k_index, top_k_weights):
            final = torch.zeros_like(hidden_states)
            with torch.no_grad():
                expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts + 1)
                expert_mask = expert_mask.permute(2, 1, 0)
                expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
            for expert_idx in expert_hit:
                expert_idx = expert_idx[0]
                if expert_idx == self.num_experts:
                    continue
                top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
                current = 1.0 / F.linear(hidden_states[token_idx], self.up[expert_idx])
                current = current * top_k_weights[token_idx, top_k_pos, None]
                final.index_add_(0, token_idx, current.to(final.dtype))
            return final
''')


def _module(rule_ids: set[str], unsafe: bool = False, experts: int = 4):
    rules = [r for r in select_rules(load_pack("graphbreaks").rules,
                                     RewriteOptions(scope=frozenset({"everywhere"}),
                                                    unsafe=unsafe))
             if r.id in rule_ids]
    text = rewrite_source(SOURCE, rules, EVERYWHERE).text
    assert "_eqrw_moe_keep(" in text
    namespace: dict = {}
    exec(compile(text, "<rewritten>", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Experts"](experts=experts)


def _routing(tokens: int = 6):
    """Top-2 routing over experts 0-2 (expert 3 gets no token)."""
    index = torch.tensor([[0, 1], [1, 2], [2, 0], [0, 2], [1, 0], [2, 1]])[:tokens]
    return index, torch.full(index.shape, 0.5)


def _graphs(module, *inputs) -> int:
    torch._dynamo.reset()
    return torch._dynamo.explain(module)(*inputs).graph_count


def _breaks(module, *inputs) -> tuple:
    """What the benchmarks count: whole-graph capture, break events, graphs."""
    report = count_graph_breaks(module, inputs, backend="eager")
    return report.fullgraph_ok, report.break_events, report.explain_breaks, report.graph_count


def _original():
    namespace: dict = {}
    exec(compile(SOURCE, "<original>", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Experts"]()


def test_the_safe_rule_traces_densely_only_without_gradients():
    module = _module({"moe-dense-dispatch"})
    hidden = torch.randn(6, 4)
    index, weights = _routing()
    with torch.no_grad():
        assert _graphs(module, hidden, index, weights) == 1
        assert _breaks(module, hidden, index, weights)[0]
    # With gradients the loop is traced as written (its hits taken again after the no_grad
    # block that computed them densely: one break event more than the original's).
    original = _breaks(_original(), hidden, index, weights)
    rewritten = _breaks(module, hidden, index, weights)
    assert not original[0] and not rewritten[0] and rewritten[1] <= original[1] + 1
    # With gradients the compiled run is the loop: the unrouted expert has no gradient.
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="aot_eager")
    compiled(hidden, index, weights).sum().backward()
    assert module.up.grad is not None and module.up.grad[3].abs().sum() == 0


def test_the_training_rule_traces_with_gradients_and_matches_them():
    module = _module({"moe-dense-dispatch-training"}, unsafe=True)
    hidden = torch.randn(6, 4)
    index, weights = _routing()
    eager = module(hidden, index, weights)
    eager.sum().backward()
    expected = module.up.grad.clone()
    module.up.grad = None
    assert _graphs(module, hidden, index, weights) == 1
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
    got = compiled(hidden, index, weights)
    got.sum().backward()
    torch.testing.assert_close(got, eager)
    torch.testing.assert_close(module.up.grad, expected)


def test_an_unrouted_token_cannot_leak_a_non_finite_value():
    module = _module({"moe-dense-dispatch"})
    hidden = torch.randn(6, 4)
    with torch.no_grad():
        module.up[0, :, 0] = 0.0
        hidden[1] = torch.tensor([0.0, 1.0, 1.0, 1.0])  # 1/0 = inf at expert 0 only
        index, weights = _routing()  # token 1 goes to experts 1 and 2, not 0
        eager = module(hidden, index, weights)
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        got = compiled(hidden, index, weights)
    assert torch.isfinite(eager).all()
    torch.testing.assert_close(got, eager)


def test_a_token_routed_twice_is_added_twice_where_every_pair_is_affordable():
    # 4 experts, top 2: every (slot, token) pair costs 4x the routed compute, within the
    # bound, so a routing table with duplicates (DeepSeek-V4's hash routing) is exact.
    module = _module({"moe-dense-dispatch"})
    hidden = torch.randn(3, 4)
    index = torch.tensor([[0, 0], [1, 2], [2, 1]])
    weights = torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.125, 0.875]])
    with torch.no_grad():
        eager = module(hidden, index, weights)  # eagerly: the loop, whatever the routing
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        got = compiled(hidden, index, weights)
    assert torch.equal(got, eager)


def test_a_token_routed_twice_fails_where_only_one_slot_per_token_is_affordable():
    # 8 experts, top 2: dense costs 4x (within the bound), every pair 8x (beyond it): one
    # slot per token, and a duplicate fails loudly instead of being counted once.
    module = _module({"moe-dense-dispatch"}, experts=8)
    hidden = torch.randn(3, 4)
    index = torch.tensor([[0, 0], [1, 2], [2, 1]])
    weights = torch.full(index.shape, 0.5)
    with torch.no_grad():
        module(hidden, index, weights)  # eagerly: the loop, whatever the routing
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        with pytest.raises(RuntimeError, match="routed twice"):
            compiled(hidden, index, weights)


@pytest.mark.parametrize("statement, reason", [
    ("current = current - current.mean(0)", "is not row-wise"),
    ("print(current)", "statement in the loop"),
    ("current = current[0]", "is not row-wise"),
])
def test_a_loop_that_is_not_a_row_wise_dispatch_is_left_with_a_note(statement, reason):
    anchor = "            current = current * top_k_weights"
    source = SOURCE.replace(anchor, f"            {statement}\n{anchor}")
    assert statement in source
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
             if r.id == "moe-dense-dispatch"]
    result = rewrite_source(source, rules, EVERYWHERE)
    assert "_eqrw_moe_route" not in result.text and "_eqrw_moe_keep" not in result.text
    assert any(reason in note.message for note in result.notes), result.notes


@pytest.mark.parametrize("old, new", [
    ("final.index_add_(0, token_idx, current.to(final.dtype))",
     "final.index_add_(0, token_idx, current.to(final.dtype))  # eqrewrite: ignore"),
    ("top_k_pos, token_idx = torch.where(expert_mask[expert_idx])",
     "top_k_pos, token_idx = torch.where(  # the routed pairs\n"
     "                expert_mask[expert_idx])"),
])
def test_either_all_edits_of_a_loop_apply_or_none(old, new):
    # The route without the add would add every token: one refused edit refuses them all.
    source = SOURCE.replace(old, new)
    assert new in source
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
             if r.id == "moe-dense-dispatch"]
    result = rewrite_source(source, rules, EVERYWHERE)
    assert "_eqrw_moe" not in result.text
    if "ignore" not in new:  # an ignored line's note is suppressed with it
        assert any("must all apply" in note.message for note in result.notes), result.notes


def test_a_mask_row_past_the_experts_is_not_visited_without_a_sentinel_test():
    # Nemotron-H's form: one_hot(..., num_classes=n + 1) with no `if e == n: continue`; the
    # extra class is never routed, and visiting it would index an expert that is not there.
    source = (SOURCE.replace("            if expert_idx == self.num_experts:\n"
                             "                continue\n", "")
              .replace(".nonzero()", ".nonzero().squeeze(-1)")
              .replace("expert_idx = expert_idx[0]", "expert_idx = expert_idx.item()"))
    rules = [r for r in load_pack("graphbreaks").rules if r.id == "moe-dense-dispatch"]
    text = rewrite_source(source, rules, EVERYWHERE).text
    assert ", spare=1)" in text
    namespace: dict = {}
    exec(compile(text, "<rewritten>", "exec"), namespace)
    torch.manual_seed(0)
    module = namespace["Experts"]()
    hidden = torch.randn(6, 4)
    index, weights = _routing()
    with torch.no_grad():
        eager = module(hidden, index, weights)
        assert _graphs(module, hidden, index, weights) == 1
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(hidden, index, weights), eager)
        routed_past = index.clone()
        routed_past[0, 0] = 4  # the extra class: eagerly an IndexError, traced the assert
        with pytest.raises(IndexError):
            module(hidden, routed_past, weights)
        with pytest.raises(RuntimeError, match="routed past the experts"):
            compiled(hidden, routed_past, weights)


def _experts(source: str, experts: int):
    namespace: dict = {}
    exec(compile(source, "<module>", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Experts"](experts=experts)


def test_a_loop_beyond_the_cost_bound_breaks_as_often_as_the_original():
    # Top-1 routing over 5 experts (and the sentinel class, which costs nothing: the loop
    # skips it): the dense form would cost 5x the routed compute (bound 4x), so the loop is
    # traced as written, with the original's breaks. Over 4 experts it is dense.
    rules = [r for r in load_pack("graphbreaks").rules if r.id == "moe-dense-dispatch"]
    text = rewrite_source(SOURCE, rules, EVERYWHERE).text
    assert "extra=1" in text
    hidden = torch.randn(6, 4)
    index = torch.tensor([[0], [1], [2], [0], [1], [2]])
    weights = torch.ones(index.shape)
    with torch.no_grad():
        original, module = _experts(SOURCE, 5), _experts(text, 5)
        expected = _breaks(original, hidden, index, weights)
        assert not expected[0] and _breaks(module, hidden, index, weights) == expected
        assert torch.equal(module(hidden, index, weights), original(hidden, index, weights))
        original, module = _experts(SOURCE, 4), _experts(text, 4)
        assert _breaks(module, hidden, index, weights)[0]
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(hidden, index, weights),
                                   original(hidden, index, weights))


# Each way a loop reads its nonzero rows, on the 5.x source: (loop edits, expected carrier).
_READS = {
    "row, unwrapped first": ([], "wrapped"),
    "item, unwrapped first": ([("expert_idx = expert_idx[0]", "expert_idx = expert_idx.item()"),
                               (".nonzero()", ".nonzero().squeeze(-1)")], "wrapped"),
    "int, unwrapped first": ([("expert_idx = expert_idx[0]", "expert_idx = int(expert_idx)"),
                              (".nonzero()", ".nonzero().squeeze(-1)")], "plain"),
    "int read in place": ([("expert_idx = expert_idx[0]\n", "\n"),
                           ("if expert_idx == self.num_experts:\n                continue\n",
                            "\n"),
                           ("self.up[expert_idx]", "self.up[int(expert_idx)]"),
                           (".nonzero()", ".nonzero().squeeze(-1)")], "plain"),
}


@pytest.mark.parametrize("form", sorted(_READS))
def test_the_dense_loop_reads_its_experts_as_the_original_reads_its_rows(form):
    # Rows read as rows (e[0], e.item()) get _eqrw_moe_row; rows read as ints get plain ints.
    # Neither is an int subclass: torch 2.11's Dynamo cannot construct one or call
    # int(self) in it (the dense loop then broke once more than the original).
    source = SOURCE
    for old, new in _READS[form][0]:
        assert old in source
        source = source.replace(old, new)
    rules = [r for r in load_pack("graphbreaks").rules if r.id == "moe-dense-dispatch"]
    text = rewrite_source(source, rules, EVERYWHERE).text
    plain = _READS[form][1] == "plain"
    assert ("wrapped=False" in text) is plain, text
    module = _experts(text, 4)
    namespace: dict = {}
    exec(compile(text, "<rewritten>", "exec"), namespace)
    assert not issubclass(namespace["_eqrw_moe_row"], int)
    hidden = torch.randn(6, 4)
    index, weights = _routing()
    with torch.no_grad():
        eager = _experts(source, 4)(hidden, index, weights)
        assert torch.equal(module(hidden, index, weights), eager)
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(hidden, index, weights), eager)


def test_a_loop_reading_its_rows_both_as_rows_and_as_ints_is_left_with_a_note():
    # No one carrier answers both e.item() and mask[e] on every release.
    source = (SOURCE.replace("expert_idx = expert_idx[0]\n", "\n")
              .replace(".nonzero()", ".nonzero().squeeze(-1)")
              .replace("if expert_idx == self.num_experts:",
                       "if expert_idx.item() == self.num_experts:"))
    rules = [r for r in load_pack("graphbreaks").rules if r.id == "moe-dense-dispatch"]
    result = rewrite_source(source, rules, EVERYWHERE)
    assert "_eqrw_moe_route" not in result.text
    assert any("neither a Python int" in note.message for note in result.notes), result.notes
