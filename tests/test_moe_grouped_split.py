"""moe-grouped-split: JetMoE's and GraniteMoE's grouped expert split, traced without a break.

Eagerly the rewritten code is the original (bitwise equal outputs); traced with gradients
off and at most 4 experts, the counts stay a tensor and the experts run densely (0 breaks,
outputs allclose); otherwise it breaks as the original does.
"""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

# The transformers 5.24 JetMoE / 4.57 GraniteMoE spelling, both users of the router: a
# feed-forward MoE (GraniteMoE's) and JetMoE's mixture of attention heads (map / reduce,
# the counts carried in a tuple through another class).
SOURCE = textwrap.dedent('''
    import torch
    import torch.nn.functional as F
    from torch import nn


    class ParallelExperts(nn.Module):
        def __init__(self, num_experts, input_size, output_size):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(num_experts, output_size, input_size))
            self.num_experts = num_experts

        def forward(self, inputs, expert_size):
            input_list = inputs.split(expert_size, dim=0)
            output_list = []
            for i in range(self.num_experts):
                output_list.append(F.linear(input_list[i], self.weight[i]))
            results = torch.cat(output_list, dim=0)
            return results


    class TopKGating(nn.Module):
        def __init__(self, input_size, num_experts, top_k):
            super().__init__()
            self.num_experts, self.top_k = num_experts, top_k
            self.layer = nn.Linear(input_size, num_experts, bias=False)

        def forward(self, hidden_states):
            logits = self.layer(hidden_states).float()
            top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
            top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
            zeros = torch.zeros([top_k_gates.size(0), self.num_experts],
                                dtype=top_k_gates.dtype, device=top_k_gates.device)
            gates = zeros.scatter(1, top_k_indices, 1)
            expert_size = gates.long().sum(0)
            expert_size = expert_size.tolist()
            top_k_experts = top_k_indices.flatten()
            _, index_sorted_experts = top_k_experts.sort(0)
            batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
            top_k_gates = top_k_gates.flatten()
            batch_gates = top_k_gates[index_sorted_experts]
            return index_sorted_experts, batch_index, batch_gates, expert_size, logits


    class MoE(nn.Module):
        def __init__(self, hidden, inter, num_experts, top_k):
            super().__init__()
            self.input_size = hidden
            self.input_linear = ParallelExperts(num_experts, hidden, inter * 2)
            self.output_linear = ParallelExperts(num_experts, inter, hidden)
            self.router = TopKGating(hidden, num_experts, top_k)

        def forward(self, layer_input):
            bsz, length, emb_size = layer_input.size()
            layer_input = layer_input.reshape(-1, emb_size)
            _, batch_index, batch_gates, expert_size, router_logits = self.router(layer_input)
            expert_inputs = layer_input[batch_index]
            hidden_states = self.input_linear(expert_inputs, expert_size)
            chunked_hidden_states = hidden_states.chunk(2, dim=-1)
            hidden_states = F.silu(chunked_hidden_states[0]) * chunked_hidden_states[1]
            expert_outputs = self.output_linear(hidden_states, expert_size)
            expert_outputs = expert_outputs * batch_gates[:, None]
            zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype,
                                device=expert_outputs.device)
            layer_output = zeros.index_add(0, batch_index, expert_outputs)
            return layer_output.view(bsz, length, self.input_size), router_logits


    class MoA(nn.Module):
        def __init__(self, hidden, inter, num_experts, top_k):
            super().__init__()
            self.top_k, self.hidden_size, self.input_size = top_k, inter, hidden
            self.input_linear = ParallelExperts(num_experts, hidden, inter)
            self.output_linear = ParallelExperts(num_experts, inter, hidden)
            self.router = TopKGating(hidden, num_experts, top_k)

        def map(self, layer_input):
            bsz, length, emb_size = layer_input.size()
            layer_input = layer_input.reshape(-1, emb_size)
            (index_sorted_experts, batch_index, batch_gates, expert_size,
             router_logits) = self.router(layer_input)
            topo_info = (index_sorted_experts, batch_index, batch_gates, expert_size)
            expert_inputs = layer_input[batch_index]
            expert_outputs = self.input_linear(expert_inputs, expert_size)
            zeros = torch.zeros((bsz * length * self.top_k, self.hidden_size),
                                dtype=expert_outputs.dtype, device=expert_outputs.device)
            layer_output = zeros.index_add(0, index_sorted_experts, expert_outputs)
            layer_output = layer_output.view(bsz, length, self.top_k, -1)
            return layer_output, router_logits, topo_info

        def reduce(self, layer_input, topo_info):
            bsz, length, k, hidden_size = layer_input.size()
            layer_input = layer_input.reshape(-1, hidden_size)
            index_sorted_experts, batch_index, batch_gates, expert_size = topo_info
            expert_inputs = layer_input[index_sorted_experts]
            expert_outputs = self.output_linear(expert_inputs, expert_size)
            expert_outputs = expert_outputs * batch_gates[:, None]
            zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype,
                                device=expert_outputs.device)
            layer_output = zeros.index_add(0, batch_index, expert_outputs)
            return layer_output.view(bsz, length, self.input_size)


    class Attention(nn.Module):
        def __init__(self, hidden, inter, num_experts, top_k):
            super().__init__()
            self.experts = MoA(hidden, inter, num_experts, top_k)

        def forward(self, hidden_states):
            query_states, router_logits, topo_info = self.experts.map(hidden_states)
            attn_output = self.experts.reduce(torch.tanh(query_states), topo_info)
            return attn_output, router_logits


    class Layer(nn.Module):
        def __init__(self, hidden=16, inter=24, num_experts=4, top_k=2):
            super().__init__()
            self.attention = Attention(hidden, inter, num_experts, top_k)
            self.mlp = MoE(hidden, inter, num_experts, top_k)

        def forward(self, x):
            attn, attn_logits = self.attention(x)
            out, mlp_logits = self.mlp(x + attn)
            return out, attn_logits, mlp_logits
''')

EDITED = ("_eqrw_moe_keep_counts(expert_size", "_eqrw_moe_grouped(inputs",
          "_eqrw_moe_merge(output_list")


def _rules():
    # The rule is unsafe (opt-in): the traced carrier of the counts is followed only through
    # the router's own file.
    return [r for r in select_rules(load_pack("graphbreaks").rules, RewriteOptions(unsafe=True))
            if r.id == "moe-grouped-split"]


def test_the_rule_is_opt_in():
    assert not [r for r in select_rules(load_pack("graphbreaks").rules, RewriteOptions())
                if r.id == "moe-grouped-split"]


def _rewrite(source: str = SOURCE):
    return rewrite_source(source, _rules(), RewriteOptions(scope=frozenset({"everywhere"}),
                                                           unsafe=True))


def _layer(source: str, **sizes):
    namespace: dict = {}
    exec(compile(source, "<layer>", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Layer"](**sizes)


def _pair(**sizes):
    text = _rewrite().text
    assert all(edit in text for edit in EDITED)
    return _layer(SOURCE, **sizes), _layer(text, **sizes)


def _breaks(module, x) -> int:
    return count_graph_breaks(module, (x,), backend="eager").break_events


def test_every_edit_is_made_in_the_router_and_the_experts():
    text = _rewrite().text
    assert text.count("_eqrw_moe_counts(expert_size) if _eqrw_moe_keep_counts(expert_size, "
                      "4, False) else expert_size.tolist()") == 1
    assert ("input_list = _eqrw_moe_grouped(inputs, expert_size, self.num_experts, 4, False) "
            "if isinstance(expert_size, _eqrw_moe_counts) else inputs.split(expert_size, "
            "dim=0)") in text
    assert ("results = _eqrw_moe_merge(output_list, input_list) if isinstance(input_list, "
            "_eqrw_moe_groups) else torch.cat(output_list, dim=0)") in text


@pytest.mark.parametrize("experts,top_k", [(4, 2), (2, 1), (8, 2), (3, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_eager_outputs_are_bitwise_the_originals(experts, top_k, dtype):
    original, rewritten = _pair(num_experts=experts, top_k=top_k)
    original.to(dtype), rewritten.to(dtype)
    for seed, shape in enumerate([(2, 5), (1, 1), (3, 16)]):
        torch.manual_seed(seed)
        x = torch.randn(*shape, 16, dtype=dtype)
        for grad in (False, True):
            with torch.set_grad_enabled(grad):
                a, b = original(x), rewritten(x)
            assert all(torch.equal(p, q) for p, q in zip(a, b))


@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-12), (torch.float32, 1e-3)])
def test_traced_without_gradients_no_break_and_allclose(dtype, tolerance):
    # float32: the experts' matmuls over all rows instead of each chunk round differently
    original, rewritten = _pair()
    original.to(dtype), rewritten.to(dtype)
    x = torch.randn(2, 7, 16, dtype=dtype)
    with torch.no_grad():
        assert _breaks(original, x) > 0
        assert _breaks(rewritten, x) == 0
        torch._dynamo.reset()
        compiled = torch.compile(rewritten, backend="eager", fullgraph=True)(x)
        eager = original(x)
    for p, q in zip(eager, compiled):
        torch.testing.assert_close(q, p, rtol=tolerance, atol=tolerance)


def test_an_expert_without_rows_and_a_single_token_traced():
    original, rewritten = _pair()
    with torch.no_grad():  # every token to expert 0 and 1: experts 2, 3 get no row
        for layer in (original, rewritten):
            for router in (layer.mlp.router, layer.attention.experts.router):
                router.layer.weight.copy_(torch.tensor([5.0, 4.0, -5.0, -5.0])[:, None]
                                          * torch.ones(4, 16))
        for x in (torch.ones(1, 3, 16), torch.randn(1, 1, 16).abs()):
            torch._dynamo.reset()
            compiled = torch.compile(rewritten, backend="eager", fullgraph=True)(x)
            for p, q in zip(original(x), compiled):
                torch.testing.assert_close(q, p, rtol=1e-3, atol=1e-3)


def test_with_gradients_or_beyond_the_bound_it_breaks_as_the_original():
    x = torch.randn(2, 5, 16)
    original, rewritten = _pair()
    assert _breaks(rewritten, x) == _breaks(original, x) > 0  # gradients on
    original, rewritten = _pair(num_experts=8, top_k=2)  # 8 experts: 8x the compute
    with torch.no_grad():
        assert _breaks(rewritten, x) == _breaks(original, x) > 0
        torch._dynamo.reset()
        compiled = torch.compile(rewritten, backend="eager")(x)
        assert all(torch.equal(p, q) for p, q in zip(original(x), compiled))


@pytest.mark.parametrize("change", [
    # the counts read as a list too
    ("expert_inputs = layer_input[batch_index]\n        hidden_states",
     "expert_inputs = layer_input[batch_index][:sum(expert_size)]\n        hidden_states"),
    # the tuple holding them escapes to the caller of the attention
    ("return attn_output, router_logits", "return attn_output, router_logits, topo_info"),
    # the router called from a function of the module
    ("class Layer(nn.Module):", "def route(x):\n    return TopKGating(4, 4, 2)(x)\n\n\n"
                                "class Layer(nn.Module):"),
    # the experts' loop reads other chunks than its own
    ("F.linear(input_list[i], self.weight[i])", "F.linear(input_list[0], self.weight[i])"),
    # the experts' loop reduces its chunk: not row-wise
    ("F.linear(input_list[i], self.weight[i])", "input_list[i].sum(0, keepdim=True)"),
    # the experts read the sizes elsewhere
    ("output_list = []", "output_list = [] if len(expert_size) else None"),
])
def test_anything_but_the_proven_flow_is_left_alone(change):
    old, new = change
    assert old in SOURCE
    result = _rewrite(SOURCE.replace(old, new, 1))
    assert "_eqrw_moe" not in result.text


def test_the_edits_land_together_or_not_at_all():
    source = SOURCE.replace("results = torch.cat(output_list, dim=0)",
                            "results = torch.cat(output_list, dim=0)  # eqrewrite: ignore")
    assert "_eqrw_moe" not in _rewrite(source).text


def test_a_counts_flow_it_cannot_follow_is_noted():
    source = SOURCE.replace("expert_inputs = layer_input[batch_index]\n        hidden_states",
                            "print(expert_size)\n        expert_inputs = layer_input[batch_index]"
                            "\n        hidden_states", 1)
    notes = [n.message for n in _rewrite(source).notes]
    assert any("moe grouped split: the counts are passed to `print`" in n
               for n in notes), notes
