"""Later rounds re-parse and re-match only the top-level statements that held edits.

Each case rewrites a module twice, with the incremental path and with the whole-file path
(``engine.eligible`` forced off), and checks both give the same text and the same edits,
round by round, and which path was taken.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from eqrewrite.rewriter.matching.matcher import find_edits
from eqrewrite.rewriter.rewriting import engine, incremental
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source

from tests.conftest import cascade_rules

# The cascade (conftest.SUB_METHOD_RULE) and a rule on annotations.
OPTIONAL_LAST = """
  - id: optional-last
    description: None | T is T | None
    pattern: None | $t
    rewrite: $t | None
"""


@pytest.fixture
def rules(tmp_path):
    return cascade_rules(tmp_path, OPTIONAL_LAST)


def both_ways(source: str, rules, monkeypatch) -> tuple[str, list[bool]]:
    """The rewrite of ``source``, checked equal with and without the incremental path,
    and for each later round whether it was incremental."""
    taken: list[bool] = []
    real = incremental.reparse

    def spy(*args):
        reparsed = real(*args)
        taken.append(reparsed is not None)
        return reparsed

    monkeypatch.setattr(engine, "reparse", spy)
    text = textwrap.dedent(source)
    fast = rewrite_source(text, rules, RewriteOptions())
    monkeypatch.setattr(engine, "eligible", lambda *_: False)
    slow = rewrite_source(text, rules, RewriteOptions())
    assert fast.text == slow.text
    assert [(n, e.rule.id, e.span, e.after) for n, e in fast.edits] == [
        (n, e.rule.id, e.span, e.after) for n, e in slow.edits]
    return fast.text, taken


def test_a_rewrite_enabling_another_is_found_in_the_reparsed_function(rules, monkeypatch):
    text, taken = both_ways("""\
        import torch


        def untouched(a):
            return a - 1


        class M:
            def f(self, x: torch.Tensor):
                return x.sub(2)
        """, rules, monkeypatch)
    assert "return torch.sub(x, 2)" in text and "return a - 1" in text
    assert taken == [True, True]  # round 2 found the cascade, round 3 found nothing


@pytest.mark.parametrize(("source", "taken"), [
    # an edit in module-level code may rebind a name other statements read
    ("""\
    import torch
    x = torch.ones(2)
    y = x.sub(1)
    """, [False, False]),
    # an edit in a header (here a default value) runs at module level
    ("""\
    import torch
    def f(x: torch.Tensor, d=torch.ones(2).sub(1)):
        return x
    """, [False, False]),
    # a one-line function: its body shares the line with its header
    ("""\
    import torch
    def f(x: torch.Tensor): return x.sub(1)
    """, [False, False]),
    # round 2's rewrite needs `import torch`, which adds a line at the top
    ("""\
    from torch import Tensor
    def f(x: Tensor):
        return x.sub(1)
    def untouched(a):
        b = a
        return b
    """, [True, False]),
], ids=["module-level", "header", "one-line", "import-added"])
def test_the_whole_file_is_parsed_again_when_an_edit_may_reach_other_statements(
        source, taken, rules, monkeypatch):
    text, incremental_rounds = both_ways(source, rules, monkeypatch)
    assert "torch.sub(" in text and "x.sub(" not in text and ").sub(" not in text
    assert incremental_rounds == taken


def test_a_changed_return_annotation_of_a_nested_function_is_a_module_fact(rules,
                                                                            monkeypatch):
    # Inference reads any function's return annotation where it is called by name,
    # so the nested g's new annotation could change other functions' matches.
    text, taken = both_ways("""\
        def f():
            def g() -> None | int:
                return 1
            return g
        """, rules, monkeypatch)
    assert "-> (int | None):" in text
    assert taken == [False]


def test_an_invalid_reparsed_function_raises_with_its_line(rules):
    old = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.sub(1)\n"
    tree = ast.parse(old)
    (edit,) = find_edits(old, tree, rules)
    new = old.replace("x.sub(1)", "x -")
    with pytest.raises(SyntaxError) as raised:
        incremental.reparse(old, new, tree, [edit])
    assert raised.value.lineno == 5


def test_the_spliced_tree_matches_a_full_parse(rules):
    old = ("import torch\n\n\ndef f(x: torch.Tensor):\n    return x.sub(1)\n\n\n"
           "def g(a):\n    return a\n")
    tree = ast.parse(old)
    (edit,) = find_edits(old, tree, rules)
    new = old.replace("x.sub(1)", "x - 1")
    reparsed = incremental.reparse(old, new, tree, [edit])
    assert reparsed is not None
    assert ast.dump(reparsed.tree, include_attributes=True) == ast.dump(
        ast.parse(new), include_attributes=True)
    assert [type(root).__name__ for root, _ in reparsed.roots] == ["FunctionDef"]
    assert reparsed.roots[0][0].name == "f"


def test_a_file_mostly_made_of_edited_definitions_is_parsed_whole(rules, monkeypatch):
    text, taken = both_ways("""\
        import torch
        def f(x: torch.Tensor):
            y = x.sub(1)
            z = y
            return z
        """, rules, monkeypatch)
    assert "y = torch.sub(x, 1)" in text
    assert taken == [False, False]
