"""The tensor_check kind: a library's ``torch._check_tensor_all(_with)`` call raises what it
raised eagerly, and checks inside the graph when traced."""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
SOURCE = textwrap.dedent('''
    import torch


    def compilable_check(cond, msg, error_type=ValueError):
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all_with(error_type, cond, lambda: msg)
        else:
            torch._check_with(error_type, cond, lambda: msg)


    def forward(ids, limit):
        compilable_check(ids < limit, "token id out of range")
        torch._check_tensor_all(ids >= 0, message=lambda: "negative token id")
        return ids * 2
''')


@pytest.fixture(scope="module")
def rewritten():
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
             if r.id == "check-tensor-all"]
    text = rewrite_source(SOURCE, rules, EVERYWHERE).text
    assert text.count("_eqrw_check_tensor_all(torch._check_tensor_all") == 2
    namespace: dict = {}
    exec(compile(text, "<rewritten>", "exec"), namespace)
    return namespace["forward"]


@pytest.mark.parametrize("ids, error, message", [
    (torch.tensor([1, 20]), ValueError, "token id out of range"),
    (torch.tensor([-1, 2]), RuntimeError, "negative token id"),
])
def test_eagerly_the_same_exception_and_message(rewritten, ids, error, message):
    namespace: dict = {}
    exec(compile(SOURCE, "<original>", "exec"), namespace)
    with pytest.raises(error, match=message):
        namespace["forward"](ids, 16)
    with pytest.raises(error, match=message):
        rewritten(ids, 16)
    # a number is checked by torch._check_with, untouched
    with pytest.raises(ValueError, match="token id out of range"):
        rewritten(20, 16)


def test_traced_the_check_stays_in_one_graph_and_still_fails(rewritten):
    torch._dynamo.reset()
    explained = torch._dynamo.explain(rewritten)(torch.tensor([1, 2]), 16)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch._dynamo.reset()
    compiled = torch.compile(rewritten, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(torch.tensor([1, 2]), 16), torch.tensor([2, 4]))
    with pytest.raises(RuntimeError, match="Expected all elements"):
        compiled(torch.tensor([1, 20]), 16)
