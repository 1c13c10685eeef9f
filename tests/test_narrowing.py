"""Later rounds match only the top-level statements a round changed or inserted.

Each case rewrites a module twice, narrowed and with every round matching the whole file
(``engine.narrowable`` forced off), and checks both give the same text and the same edits,
round by round, and which later rounds were narrowed.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace
from types import SimpleNamespace

import pytest
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting import engine, narrowing
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules
from eqrewrite.rewriter.syntax.enums import Scope

from tests.conftest import cascade_rules

FORWARD = frozenset({Scope.FORWARD})
EVERY_SCOPE = {"traced": frozenset(), "profiled": frozenset()}
matched: list[list[str] | None] = []  # what each narrowed round matched (both_ways)


@pytest.fixture
def cascade(tmp_path):
    """The cascade (conftest.SUB_METHOD_RULE), only in `forward`: a scoped rule, so the
    template fast path (incremental.py) is not taken."""
    return [replace(r, scope=FORWARD) for r in cascade_rules(tmp_path)]


def both_ways(source: str, rules, monkeypatch, options: RewriteOptions | None = None
              ) -> tuple[str, list[bool]]:
    """The rewrite of ``source``, checked equal narrowed and whole, and for each later
    round whether it was narrowed."""
    narrowed: list[bool] = []
    matched.clear()
    real_kept, real_roots = narrowing.kept_statements, narrowing.changed_roots

    def kept_spy(*args):
        kept = real_kept(*args)
        if kept is None:
            narrowed.append(False)
        return kept

    def roots_spy(*args):
        roots = real_roots(*args)
        narrowed.append(roots is not None)
        matched.append(None if roots is None else [
            getattr(node, "name", type(node).__name__) for node, _ in roots])
        return roots

    monkeypatch.setattr(engine, "kept_statements", kept_spy)
    monkeypatch.setattr(engine, "changed_roots", roots_spy)
    text, options = textwrap.dedent(source), options or RewriteOptions()
    fast = rewrite_source(text, rules, options)
    monkeypatch.setattr(engine, "narrowable", lambda *_: False)
    slow = rewrite_source(text, rules, options)
    assert fast.text == slow.text
    assert [(n, e.rule.id, e.span, e.after) for n, e in fast.edits] == [
        (n, e.rule.id, e.span, e.after) for n, e in slow.edits]
    assert [(n.rule, n.line, n.col, n.message) for n in fast.notes] == [
        (n.rule, n.line, n.col, n.message) for n in slow.notes]
    return fast.text, narrowed


METHODS = """\
    import torch
    from torch import nn


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2

        def helper(self, a):
            return a - 1

        def forward(self, x: torch.Tensor):
            {body}
            return x.sub(2)
    """


def test_an_edited_class_is_matched_again_only_in_its_edited_methods(cascade, monkeypatch):
    text, narrowed = both_ways(METHODS.format(body="y = 1"), cascade, monkeypatch)
    assert "return torch.sub(x, 2)" in text
    assert narrowed == [True, True] and matched == [["forward"], ["forward"]]


@pytest.mark.parametrize("body", [
    "self.scale = 3",  # other methods' inference reads what is stored on self
    "self.register_buffer('b', x)",
], ids=["self-store", "buffer"])
def test_a_method_storing_on_self_has_its_class_matched_whole(body, cascade, monkeypatch):
    text, narrowed = both_ways(METHODS.format(body=body), cascade, monkeypatch)
    assert "return torch.sub(x, 2)" in text
    assert narrowed == [True, True] and matched == [["M"], ["M"]]


def test_a_rewrite_enabling_another_is_found_in_the_narrowed_round(cascade, monkeypatch):
    text, narrowed = both_ways("""\
        import torch
        from torch import nn


        class Untouched(nn.Module):
            def forward(self, a):
                return a - 1


        class M(nn.Module):
            def forward(self, x: torch.Tensor):
                return x.sub(2)
        """, cascade, monkeypatch)
    assert "return torch.sub(x, 2)" in text and "return a - 1" in text
    assert narrowed == [True, True]  # round 2 found the cascade, round 3 found nothing


def test_a_graph_break_rewrite_inserting_helpers_is_narrowed(monkeypatch):
    # The rewrite inserts helper imports, functions and an attribute assignment at the top
    # (lines move), and the untouched class stays out of the next round.
    rules = select_rules(load_pack("graphbreaks").rules, RewriteOptions())
    options = RewriteOptions(function_scopes=EVERY_SCOPE)
    text, narrowed = both_ways("""\
        import logging

        import torch
        from torch import nn

        logger = logging.getLogger(__name__)


        class Block(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                print("block", x.shape)
                if x.sum() > 0:
                    out = x + 1
                else:
                    out = x - 1
                return out


        class Untouched(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                logger.info("shape %s", x.shape)
                return x * 2
        """, rules, monkeypatch, options)
    assert "_eqrw_print(" in text and "_eqrw_where(" in text and "_eqrw_log(" in text
    assert narrowed == [True]


@pytest.mark.parametrize(("source", "narrowed"), [
    # an edit in module-level code may rebind a name other statements read
    ("""\
    import torch
    from torch import nn
    x = torch.ones(2)
    class M(nn.Module):
        def forward(self, y: torch.Tensor):
            return y.sub(1)
    """, [True, True]),
    # round 2's rewrite needs `import torch`: the imports change
    ("""\
    from torch import Tensor, nn
    class M(nn.Module):
        def forward(self, x: Tensor):
            return x.sub(1)
    """, [True, False]),
    # a kept statement mentions a helper's name (a file rewritten before)
    ("""\
    import torch
    from torch import nn
    class M(nn.Module):
        def forward(self, x: torch.Tensor):
            return x.sub(1)
    def _eqrw_where(c, a, b):
        return a
    """, [False, False]),
], ids=["module-level-untouched", "import-added", "helper-name-kept"])
def test_the_whole_file_is_matched_when_a_kept_statement_may_read_what_changed(
        source, narrowed, cascade, monkeypatch):
    text, rounds = both_ways(source, cascade, monkeypatch)
    assert "torch.sub(" in text and ".sub(" not in text.replace("torch.sub(", "")
    assert rounds == narrowed


def test_a_traced_scope_recomputed_from_the_module_is_not_narrowed(monkeypatch):
    # Without the run's scopes, `traced` is worked out from each round's text, where an
    # edited caller could change which functions are traced.
    rules = select_rules(load_pack("graphbreaks").rules, RewriteOptions())
    assert any(Scope.TRACED in r.scope for r in rules)
    assert not narrowing.narrowable(rules, None)
    assert not narrowing.narrowable(rules, {"profiled": frozenset()})
    assert narrowing.narrowable(rules, {"traced": frozenset({"M.forward"})})


def edit_at(line: int) -> SimpleNamespace:
    """An edit somewhere on ``line`` (only its span is read)."""
    return SimpleNamespace(span=(line, 4, line, 10))


OLD = """\
import torch


def f(x):
    y = x.sum()
    return y


def g(x) -> int:
    return x
"""


def test_only_the_edited_and_inserted_statements_are_matched_again():
    kept = narrowing.kept_statements(OLD, ast.parse(OLD), [edit_at(5)], [])
    assert kept is not None
    new = OLD.replace("import torch\n", "import torch\nimport torch as _eqrw_torch\n"
                      "\n\ndef _eqrw_where(c, a, b):\n    return a\n").replace(
        "y = x.sum()", "y = torch.sum(x)")
    roots = narrowing.changed_roots(kept, new, ast.parse(new))
    assert roots is not None
    assert [getattr(s, "name", type(s).__name__) for s, _ in roots] == [
        "Import", "_eqrw_where", "f"]


@pytest.mark.parametrize("edited", [
    "def h() -> torch.Tensor:\n        return x\n    y = h()",  # a function defined
    "global g\n    y = x.sum()",  # a global name
], ids=["nested-function", "global"])
def test_a_module_fact_changed_by_the_edited_statement_matches_the_whole_file(edited):
    kept = narrowing.kept_statements(OLD, ast.parse(OLD), [edit_at(5)], [])
    assert kept is not None
    new = OLD.replace("y = x.sum()", edited)
    assert narrowing.changed_roots(kept, new, ast.parse(new)) is None


def test_an_edit_outside_a_top_level_definition_is_not_narrowed():
    assert narrowing.kept_statements(OLD, ast.parse(OLD), [edit_at(1)], []) is None


OLD_CLASS = """\
class M:
    def f(self, x):
        y = x.sum()
        return y

    def g(self, x):
        return x
"""


@pytest.mark.parametrize(("old", "new", "roots"), [
    ("y = x.sum()", "y = sum(x)", ["f"]),
    # what select reads of a method called on self (torch.cond branches must be pure)
    ("y = x.sum()", "y = x.add_(1)", ["M"]),
    # a member edited where no edit was: not the text the round left
    ("return x\n", "return -x\n", ["M"]),
    ("class M:", "@decorated\nclass M:", ["M"]),  # the header
], ids=["edited-method", "now-in-place", "other-member", "header"])
def test_a_class_is_narrowed_to_its_edited_methods_only_when_the_rest_is_as_it_was(
        old, new, roots):
    kept = narrowing.kept_statements(OLD_CLASS, ast.parse(OLD_CLASS), [edit_at(3)], [])
    assert kept is not None and kept.classes[0] is not None
    text = OLD_CLASS.replace(old, new)
    found = narrowing.changed_roots(kept, text, ast.parse(text))
    assert found is not None
    assert [node.name for node, _ in found] == roots
