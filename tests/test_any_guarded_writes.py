"""``any-guarded-writes``: ``if mask.any(): T[mask] = V`` keeps the original test eagerly and
runs the writes unguarded when traced. Checked by running the rewritten module: eager outputs
bit for bit, compiled outputs equal, breaks gone, with masks that select nothing and masks
that select something, and the run-time check for a ``T`` the inference cannot type."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

SOURCE = textwrap.dedent('''\
    import torch


    class Contrastive(torch.nn.Module):
        def logits_of(self, x, y):
            return torch.cosine_similarity(x, y, dim=-1)

        def forward(self, x: torch.Tensor, y: torch.Tensor, prior: torch.Tensor):
            logits = self.logits_of(x, y)
            same = (x == y).all(-1)
            if same.any():
                logits[same] = float("-inf")
            out = x * 2.0
            valid = ~torch.isnan(prior)
            if valid.any():
                out[valid] = prior[valid]
            return logits, out
''')


def _rewritten(only: bool = True) -> str:
    """The source rewritten by this rule alone, or (``only`` False) by the whole pack, whose
    ``mask-scatter`` also rewrites ``out[valid] = prior[valid]`` (a selection is a dynamic
    shape: a break by default, whatever guards it)."""
    rules = [r for r in select_rules(load_pack("graphbreaks").rules, RewriteOptions())
             if not only or r.id == "any-guarded-writes"]
    return rewrite_source(SOURCE, rules, RewriteOptions(scope=frozenset({"everywhere"}))).text


def _module(source: str) -> torch.nn.Module:
    namespace: dict = {}
    exec(compile(source, "<contrastive>", "exec"), namespace)
    return namespace["Contrastive"]()


def _inputs(select: bool) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(6, 4, generator=generator)
    y = torch.randn(6, 4, generator=generator)
    prior = torch.full((6, 4), float("nan"))
    if select:  # rows 1 and 4 equal, some prior values known
        y[1], y[4] = x[1], x[4]
        prior[2, 1] = prior[5, 3] = 7.0
    return x, y, prior


def test_both_guards_are_rewritten_the_untyped_target_checked_at_run_time():
    text = _rewritten()
    assert "if _eqrw_compiling_on_tensors(logits) or same.any():" in text
    assert "if _eqrw_compiling() or valid.any():" in text


@pytest.mark.parametrize("only", [True, False])
@pytest.mark.parametrize("select", [False, True])
def test_values_are_the_originals_eagerly_and_compiled(select, only):
    original, rewritten = _module(SOURCE), _module(_rewritten(only))
    inputs = _inputs(select)
    expected = original(*inputs)
    for got in (rewritten(*inputs), torch.compile(rewritten, backend="eager")(*inputs)):
        for want, have in zip(expected, got):
            assert torch.equal(want, have) or torch.allclose(want, have, equal_nan=True)
            assert torch.equal(want.isinf(), have.isinf())
    assert torch.equal(rewritten(*inputs)[0], expected[0])  # eagerly bit for bit


def test_the_breaks_go_in_both_modes():
    inputs = _inputs(False)
    for switches in ({}, {"capture_scalar_outputs": True,
                          "capture_dynamic_output_shape_ops": True}):
        with torch._dynamo.config.patch(**switches):
            before = count_graph_breaks(_module(SOURCE), inputs, backend="eager").break_events
            after = count_graph_breaks(_module(_rewritten(only=False)), inputs,
                                       backend="eager").break_events
        assert before >= 2 and after == 0, (switches, before, after)


def test_a_target_that_is_not_a_tensor_keeps_the_original_test_when_traced():
    # The run-time check: an array (what the inference could not rule out) takes the
    # original `if`, so an all-False mask writes nothing into it, as before.
    namespace: dict = {}
    exec(compile(_rewritten(), "<contrastive>", "exec"), namespace)
    check = namespace["_eqrw_compiling_on_tensors"]
    assert check(np.zeros(3)) is False and check(torch.zeros(3)) is False  # eager: never
    traced = torch.compile(lambda t, a: check(t) and not check(t, a), backend="eager")
    assert bool(traced(torch.zeros(3), np.zeros(3)))
