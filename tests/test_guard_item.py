"""``assert t.item() <op> y`` whatever ``t`` and ``y`` are proven to hold (Flaubert's
``assert lengths.max().item() <= slen``, ``lengths`` a parameter with a default): the
rewrite behaves as the original for tensors, numpy arrays and other objects, and checks
inside the graph when traced."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
SOURCE = textwrap.dedent('''
    def check(ids, lengths=None):
        bs, slen = ids.shape
        if lengths is None:
            lengths = (ids != 0).sum(1)
        assert lengths.max().item() <= slen
        return ids * 2
''')


def _load(text: str):
    namespace: dict = {}
    exec(compile(text, "<test>", "exec"), namespace)
    return namespace["check"]


@pytest.fixture(scope="module")
def functions():
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
             if r.id == "guard-assert"]
    text = rewrite_source(SOURCE, rules, EVERYWHERE).text
    assert "_eqrw_compare(lengths.max(), '<=', slen)" in text
    return _load(SOURCE), _load(text)


@pytest.mark.parametrize("lengths", [
    None, torch.tensor([1, 2]), torch.tensor([9, 2]), np.array([1, 3]), np.array([7, 1]),
    [1, 2], "not a tensor"])
def test_every_kind_of_value_behaves_as_the_original(functions, lengths):
    original, rewritten = functions
    ids = torch.tensor([[1, 0, 2], [3, 4, 0]])
    outcomes = []
    for function in (original, rewritten):
        try:
            outcomes.append(("ok", function(ids, lengths).tolist()))
        except Exception as error:  # the same exception type and message
            outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]


def test_traced_the_check_stays_in_the_graph(functions):
    _, rewritten = functions
    ids = torch.tensor([[1, 0, 2], [3, 4, 0]])
    torch._dynamo.reset()
    explained = torch._dynamo.explain(rewritten)(ids, torch.tensor([1, 2]))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch._dynamo.reset()
    compiled = torch.compile(rewritten, backend="aot_eager", fullgraph=True)
    with pytest.raises(RuntimeError):
        compiled(ids, torch.tensor([9, 2]))
