"""The compile_only_skip kind (rule follow-eager-path): a block of plain tensor code that a
library skips only while compiling runs as it does eagerly. transformers 4.57/5.24's
encoder-decoders leave a decoder's default mask None when compiled and then size the causal
mask one key longer than the keys: Dynamo fails on the original, and the rewritten code
compiles whole and computes what eager computes."""

from __future__ import annotations

import textwrap

import pytest
import torch
from rule_support import pack_rules, rewrite, run_module

# BART's decoder in small: the mask built eagerly, and the causal mask sized from it, or
# one longer than the keys when it is None (transformers' `_update_causal_mask`).
SOURCE = textwrap.dedent('''
    import torch
    from torch.compiler import is_compiling


    class Decoder(torch.nn.Module):
        def forward(self, x: torch.Tensor, attention_mask=None, past: int = 0):
            batch_size, seq_length = x.shape[:2]
            if attention_mask is None and not is_compiling():
                # required mask seq length can be calculated via length of past cache
                mask_seq_length = past + seq_length
                attention_mask = torch.ones(batch_size, mask_seq_length, device=x.device)
            if isinstance(attention_mask, torch.Tensor):
                target = attention_mask.shape[-1]
            else:
                target = past + seq_length + 1
            causal = torch.full((seq_length, target), -1e9).triu(1)
            scores = x @ x.transpose(1, 2)
            return (scores + causal).softmax(-1) @ x


    class Logged(torch.nn.Module):
        def forward(self, x: torch.Tensor, position_ids=None):
            if position_ids is not None and not is_compiling():
                print("position_ids are ignored")
                position_ids = None
            return x
''')


@pytest.fixture(scope="module")
def rewritten() -> str:
    rules = pack_rules("graphbreaks", "follow-eager-path")
    text = rewrite(SOURCE, rules)
    assert "        if attention_mask is None:\n" \
           "            # required mask seq length" in text  # the comment kept
    assert "if position_ids is not None and not is_compiling():" in text  # it prints
    assert rewrite(text, rules) == text
    return text


@pytest.mark.parametrize("mask", [None, torch.ones(2, 6)])
def test_eager_outputs_are_bitwise_equal(rewritten, mask):
    x = torch.randn(2, 6, 4)
    original, new = run_module(SOURCE)["Decoder"](), run_module(rewritten)["Decoder"]()
    assert torch.equal(new(x, mask), original(x, mask))


def test_compiled_the_rewritten_decoder_follows_eager_where_the_original_fails(rewritten):
    x = torch.randn(2, 6, 4)
    original, new = run_module(SOURCE)["Decoder"](), run_module(rewritten)["Decoder"]()
    want = original(x)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="size of tensor|broadcast|must match"):
        torch.compile(original, backend="eager", fullgraph=True)(x)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(new)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch._dynamo.reset()
    assert torch.equal(torch.compile(new, backend="eager", fullgraph=True)(x), want)
