"""The size_tests_last kind: an ``and``/``or`` chain that compares sizes before testing
``None`` or a flag tests those first. The value is the original's for every input, and
under Dynamo's switches (``capture_scalar_outputs``, ``capture_dynamic_output_shape_ops``)
a flag that decides the chain no longer makes Dynamo guard on an unbacked size."""

from __future__ import annotations

import itertools
import textwrap

import pytest
import torch
from rule_support import pack_rules, rewrite, run_module

SOURCE = textwrap.dedent('''
    import torch


    def _pack(query):
        return query


    def causal_flag(query: torch.Tensor, attention_mask, is_causal):
        q_length = query.shape[2]
        query = _pack(query)  # rebound after the shape is read (transformers' pack_gqa)
        is_causal = q_length > 1 and attention_mask is None and is_causal
        return is_causal


    def rebound_first(query: torch.Tensor, attention_mask, is_causal):
        query = _pack(query)  # not proven a tensor when its shape is read: left alone
        q_length = query.shape[2]
        return q_length > 1 and attention_mask is None and is_causal


    def any_flag(query: torch.Tensor, attention_mask, is_causal):
        bsz, heads, q_length, _ = query.shape
        return q_length == 1 or attention_mask is not None or is_causal


    def mask_last(query: torch.Tensor, attention_mask):
        q_length = query.size(2) - 1
        return q_length >= 1 and attention_mask is None


    def attention(query: torch.Tensor, attention_mask, is_causal):
        q_length = query.shape[2]
        is_causal = q_length > 1 and attention_mask is None and is_causal
        return torch.nn.functional.scaled_dot_product_attention(
            query, query, query, attn_mask=attention_mask, is_causal=is_causal)


    def per_segment(x: torch.Tensor, grid: torch.Tensor):
        seqlens = grid[:, 0] * grid[:, 1] * grid[:, 2]
        cu = torch.nn.functional.pad(seqlens.cumsum(0, dtype=torch.int32), (1, 0))
        parts = torch.split(x, (cu[1:] - cu[:-1]).tolist(), dim=2)
        return torch.cat([attention(p, None, False) for p in parts], dim=2)
''')
FUNCTIONS = ("causal_flag", "any_flag", "mask_last", "attention", "per_segment")


@pytest.fixture(scope="module")
def rewritten() -> str:
    rules = pack_rules("graphbreaks", "size-tests-last")
    text = rewrite(SOURCE, rules)
    assert "(attention_mask is None and is_causal is not False and q_length > 1 and " \
           "is_causal)" in text
    assert "(attention_mask is not None or is_causal is True or q_length == 1 or " \
           "is_causal)" in text
    assert "(attention_mask is None and q_length >= 1 and attention_mask is None)" in text
    assert "return q_length > 1 and attention_mask is None and is_causal" in text
    assert rewrite(text, rules) == text  # nothing left to move
    return text


# Values of every type a flag may hold: the chain's value must be the same object type.
FLAGS = [None, False, True, 0, 1, 0.0, "", "causal", [], torch.tensor(False)]


@pytest.mark.parametrize("name", ["causal_flag", "any_flag", "mask_last"])
def test_the_same_value_for_every_input(rewritten, name):
    original, new = run_module(SOURCE)[name], run_module(rewritten)[name]
    masks = [None, torch.ones(1, 1, 3, 3, dtype=torch.bool)]
    for length, mask, flag in itertools.product([0, 1, 2, 5], masks, FLAGS):
        query = torch.zeros(1, 2, length, 4)
        args = (query, mask) if name == "mask_last" else (query, mask, flag)
        want, got = original(*args), new(*args)
        assert type(got) is type(want) and (got is want or (
            isinstance(want, torch.Tensor) and got is flag) or got == want), (length, mask, flag)


def _explain(fn, *args):
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(*args)


@pytest.fixture
def switches():
    with torch._dynamo.config.patch(capture_scalar_outputs=True,
                                     capture_dynamic_output_shape_ops=True):
        yield
    torch._dynamo.reset()


def test_under_the_switches_no_guard_on_the_unbacked_length(rewritten, switches):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    x, grid = torch.randn(1, 2, 10, 4), torch.tensor([[1, 2, 2], [2, 1, 3]])
    original, new = run_module(SOURCE)["per_segment"], run_module(rewritten)["per_segment"]
    want = original(x, grid)
    assert torch.equal(new(x, grid), want)
    before = _explain(original, x, grid)
    assert before.graph_break_count >= 1
    assert any("> 1" in str(b.reason) for b in before.break_reasons)
    after = _explain(new, x, grid)
    assert not any("> 1" in str(b.reason) for b in after.break_reasons)
    with sdpa_kernel(SDPBackend.MATH):  # the kernel choice asks whether the length is 0
        assert _explain(new, x, grid).graph_break_count == 0
        torch._dynamo.reset()
        compiled = torch.compile(new, backend="eager")
        assert torch.equal(compiled(x, grid), original(x, grid))
