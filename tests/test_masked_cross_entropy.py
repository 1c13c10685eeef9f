"""The masked cross-entropy kind (rewriter/kinds/graphbreaks/masked/masked_cross_entropy.py)
run, on what its examples do not show: the traced graph, the loss and its gradients (with
gradients on), a non-finite logit in a row the mask leaves out, labels already ignored, and
float labels (the original statements)."""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.oracle.judging.graphbreaks import count_graph_breaks
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source

# The LLaVA family's and Qwen2-Audio's loss (transformers 4.46.3), shortened.
SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(6, 5)

        def forward(self, hidden: torch.Tensor, labels: torch.Tensor,
                    attention_mask: torch.Tensor):
            logits = self.proj(hidden)
            shift_mask = attention_mask[..., 1:]
            shift_logits = logits[..., :-1, :][shift_mask.to(logits.device) != 0].contiguous()
            shift_labels = labels[..., 1:][shift_mask.to(labels.device) != 0].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            return loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


    class Loss(nn.Module):
        def forward(self, logits: torch.Tensor, labels: torch.Tensor,
                    attention_mask: torch.Tensor):
            shift_mask = attention_mask[..., 1:]
            shift_logits = logits[..., :-1, :][shift_mask.to(logits.device) != 0].contiguous()
            shift_labels = labels[..., 1:][shift_mask.to(labels.device) != 0].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            return loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
''')
RULES = [r for r in load_pack("graphbreaks").rules if r.id == "masked-cross-entropy"]


def _pair(name: str = "Head"):
    text = rewrite_source(SOURCE, RULES, RewriteOptions()).text
    assert text.count("_eqrw_ce_logits(shift_logits") == 0
    assert text.count(" = _eqrw_ce_logits(") == 2 and text.count(" = _eqrw_ce_labels(") == 2
    modules = []
    for source in (SOURCE, text):
        namespace: dict = {}
        exec(compile(source, "<module>", "exec"), namespace)
        torch.manual_seed(0)
        modules.append(namespace[name]())
    return modules


def _inputs():
    torch.manual_seed(1)
    hidden = torch.randn(2, 7, 6)
    labels = torch.randint(0, 5, (2, 7))
    labels[0, 3] = -100  # already ignored, and selected
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :3] = 0  # left padding
    return hidden, labels, mask


def _loss_and_grads(module, inputs, compiled: bool):
    module.zero_grad()
    torch._dynamo.reset()
    run = torch.compile(module, backend="aot_eager", fullgraph=True) if compiled else module
    loss = run(*inputs)
    loss.backward()
    return loss.detach(), module.proj.weight.grad.clone(), module.proj.bias.grad.clone()


def test_traced_whole_with_the_loss_and_gradients_of_the_original():
    original, rewritten = _pair()
    inputs = _inputs()
    expected = _loss_and_grads(original, inputs, compiled=False)
    assert all(torch.equal(a, b) for a, b in zip(_loss_and_grads(rewritten, inputs, False),
                                                  expected))  # eagerly the original
    torch._dynamo.reset()
    before = count_graph_breaks(original, inputs, backend="eager")
    torch._dynamo.reset()
    after = count_graph_breaks(rewritten, inputs, backend="eager")
    assert (before.break_events, before.explain_breaks) != (0, 0)
    assert after.fullgraph_ok and (after.break_events, after.explain_breaks) == (0, 0)
    for got, want in zip(_loss_and_grads(rewritten, inputs, compiled=True), expected):
        torch.testing.assert_close(got, want)


def test_a_non_finite_logit_in_a_row_left_out_reaches_neither_loss_nor_gradient():
    original, rewritten = _pair("Loss")
    _, labels, mask = _inputs()
    logits = torch.randn(2, 7, 5)
    logits[1, 1] = float("inf")  # masked out (and not the last row, which the shift drops)
    results = []
    for module, compiled in ((original, False), (rewritten, True)):
        leaf = logits.clone().requires_grad_()
        torch._dynamo.reset()
        run = torch.compile(module, backend="aot_eager", fullgraph=True) if compiled else module
        loss = run(leaf, labels, mask)
        loss.backward()
        results.append((loss.detach(), leaf.grad))
    (want_loss, want_grad), (got_loss, got_grad) = results
    assert torch.isfinite(want_loss) and torch.isfinite(want_grad).all()
    assert torch.equal(got_grad[1, 1], torch.zeros(5))
    torch.testing.assert_close(got_loss, want_loss)
    torch.testing.assert_close(got_grad, want_grad)


def test_float_labels_take_the_original_statements():
    _, rewritten = _pair()
    hidden, labels, mask = _inputs()
    with pytest.raises(RuntimeError):
        torch._dynamo.reset()
        torch.compile(rewritten, backend="aot_eager")(hidden, labels.float(), mask)


# PaliGemma's and Gemma 3's spelling: the selection rebinds its source, whose width crops the
# mask first, and the loss takes its arguments through names.
REBOUND = textwrap.dedent('''
    import torch
    from torch import nn


    class Loss(nn.Module):
        vocab_size = 5

        def forward(self, logits: torch.Tensor, labels: torch.Tensor,
                    attention_mask: torch.Tensor):
            shift_logits = logits[..., :-1, :]
            shift_labels = labels[..., 1:]
            shift_mask = attention_mask[:, -shift_logits.shape[1]:].to(logits.device)
            shift_logits = shift_logits[shift_mask.to(logits.device) != 0].contiguous()
            shift_labels = shift_labels[shift_mask.to(shift_labels.device) != 0].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            flat_logits = shift_logits.view(-1, self.vocab_size)
            flat_labels = shift_labels.view(-1).to(shift_logits.device)
            return loss_fct(flat_logits, flat_labels)
''')


def test_the_rebinding_spelling_traces_whole_with_the_original_loss():
    text = rewrite_source(REBOUND, RULES, RewriteOptions()).text
    assert text.count(" = _eqrw_ce_logits(") == 1 and text.count(" = _eqrw_ce_labels(") == 1
    modules = []
    for source in (REBOUND, text):
        namespace: dict = {}
        exec(compile(source, "<module>", "exec"), namespace)
        modules.append(namespace["Loss"]())
    original, rewritten = modules
    _, labels, mask = _inputs()
    inputs = (torch.randn(2, 7, 5), labels, mask)
    expected = original(*inputs)
    assert torch.equal(rewritten(*inputs), expected)
    torch._dynamo.reset()
    after = count_graph_breaks(rewritten, inputs, backend="eager")
    assert (after.break_events, after.explain_breaks) == (0, 0)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(rewritten, backend="aot_eager")(*inputs), expected)
