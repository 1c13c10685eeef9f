"""The fold kind (``fold-tensor-tests``): an ``if``/``elif`` chain over 0-d tensor flags
reads the data once. Same arm, same exception and message for every mask; one break where
the chain took up to five; left alone when a test could not be computed early; never one
part of the fold without the other (a suppressed first test, a replay without it)."""

from __future__ import annotations

import textwrap

import pytest
import torch
from eqrewrite.rewriter.api import rewrite_rounds
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))
PACK = select_rules(load_pack("graphbreaks").rules, EVERYWHERE)
FOLD = [r for r in PACK if r.id == "fold-tensor-tests"]
CHAIN = textwrap.dedent('''
    import torch


    def side(x: torch.Tensor, mask: torch.Tensor, default: str):
        left = torch.any(mask[:, 0] == 0)
        right = torch.any(mask[:, -1] == 0)
        if left and not right:
            picked = "left"
        elif not left and right:
            picked = "right"
        elif not left and not right:  # cannot tell
            picked = default
        else:
            raise ValueError(f"both sides padded: {mask.sum()}")
        return x.flip(-1) if picked == "left" else x, picked
''')


def _function(text: str, name: str):
    namespace: dict = {}
    exec(compile(text, "<module>", "exec"), namespace)
    return namespace[name]


def _mask(left: bool, right: bool) -> torch.Tensor:
    mask = torch.ones(2, 4, dtype=torch.long)
    mask[0, 0] = 0 if left else 1
    mask[1, -1] = 0 if right else 1
    return mask


@pytest.fixture(scope="module")
def rewritten() -> str:
    text = rewrite_source(CHAIN, PACK, EVERYWHERE).text
    assert text.count("_eqrw_first_true(") == 2 and "elif _eqrw_arm_8 == 2:  # cannot tell" in (
        text)
    return text


@pytest.mark.parametrize("left, right", [(True, False), (False, True), (False, False),
                                         (True, True)])
def test_the_same_arm_and_the_same_exception(rewritten, left, right):
    x, mask = torch.arange(4.0).expand(2, 4), _mask(left, right)
    results = []
    for text in (CHAIN, rewritten):
        try:
            out, picked = _function(text, "side")(x, mask, "right")
            results.append((out.tolist(), picked))
        except ValueError as error:
            results.append(str(error))
    assert results[0] == results[1]


@pytest.mark.parametrize("left, right", [(False, False), (True, False), (False, True)])
def test_one_read_where_the_chain_took_several(rewritten, left, right):
    x, mask = torch.arange(4.0).expand(2, 4), _mask(left, right)
    counts = []
    for text in (CHAIN, rewritten):
        torch._dynamo.reset()
        explained = torch._dynamo.explain(_function(text, "side"))(x, mask, "left")
        counts.append(len(explained.break_reasons))  # a break before no more graph counts
    assert counts[1] == 1 < counts[0]
    torch._dynamo.reset()
    compiled = torch.compile(_function(rewritten, "side"), backend="aot_eager")
    out, picked = compiled(x, mask, "left")
    expected = _function(CHAIN, "side")(x, mask, "left")
    assert picked == expected[1] and torch.equal(out, expected[0])


@pytest.mark.parametrize("body", [
    # a later test that raises on an empty tensor (max): computing it first could raise
    "if x.any():\n    z = 1\nelif x.max() > 0:\n    z = 2\nelse:\n    z = 3",
    # a flag of several elements: `and` raises, `&` would not
    "m = x > 0\nif y.any():\n    z = 0\nelif m and y.any():\n    z = 1\nelif y.all():\n"
    "    z = 2\nelse:\n    z = 3",
    # a flag assigned only on some paths to the chain
    "if x.numel() > 2:\n    f = x.any()\nif y.any():\n    z = 1\nelif f:\n    z = 2\nelse:\n"
    "    z = 3",
    # an impure test
    "if x.any():\n    z = 1\nelif torch.rand(()).sum() > 0.5:\n    z = 2\nelse:\n"
    "    z = 3",
    # a single read: nothing to fold
    "if x.any():\n    z = 1\nelif y is None:\n    z = 2\nelse:\n    z = 3",
])
def test_left_alone_when_a_test_cannot_be_computed_first(body):
    text = ("import torch\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n"
            + textwrap.indent(body, "    ") + "\n    return z\n")
    assert rewrite_source(text, FOLD, EVERYWHERE).text == text


def test_a_select_chain_is_left_to_the_selects():
    text = textwrap.dedent('''
        import torch

        def f(x: torch.Tensor, l: torch.Tensor, r: torch.Tensor):
            if l.any() and not r.any():
                y = x + 1
            elif r.any():
                y = x - 1
            else:
                y = x
            return y
    ''')
    assert rewrite_source(text, FOLD, EVERYWHERE).text == text
    assert "_eqrw_where(" in rewrite_source(text, PACK, EVERYWHERE).text


def test_a_suppressed_first_test_keeps_the_whole_chain():
    text = CHAIN.replace("if left and not right:",
                         "if left and not right:  # eqrewrite: ignore[fold-tensor-tests]")
    assert rewrite_source(text, FOLD, EVERYWHERE).text == text


def test_a_replay_without_the_first_test_drops_the_others():
    rounds = rewrite_rounds(CHAIN, FOLD, EVERYWHERE)
    first = next(e for e in rounds.edits if "_eqrw_first_true" in e.edit.template)
    assert len(rounds.edits) == 3
    assert rounds.without({(first.round, first.index)}) == CHAIN


def test_the_notes_on_the_folded_elifs_go_and_the_first_tests_stays():
    """A folded ``elif`` reads a Python int: select's notes there (why it could not become a
    select) no longer hold; the first test still reads the data once, so its note stays.
    Suppressed, the fold leaves every note in place."""
    def notes(text: str) -> list[int]:
        return sorted(n.line for n in rewrite_source(text, PACK, EVERYWHERE).notes)

    lines = {t: CHAIN.splitlines().index(line) + 1 for t, line in (
        ("if", "    if left and not right:"), ("elif", "    elif not left and right:"))}
    assert notes(CHAIN) == [lines["if"]]
    suppressed = CHAIN.replace("if left and not right:",
                               "if left and not right:  # eqrewrite: ignore[fold-tensor-tests]")
    assert lines["elif"] in notes(suppressed) and len(notes(suppressed)) == 3
