"""Kinds register themselves: a module in the kinds package is found without a central list."""

from __future__ import annotations

import sys
import textwrap

import pytest
from eqrewrite.rewriter import kinds
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting import helpers
from eqrewrite.rewriter.rewriting.engine import rewrite_source

from tests.conftest import write_pack

# A kind that turns `x.abs()` into a helper call, with the helper's source beside it.
ABS_KIND = '''
"""A kind made for the test."""
import ast

from eqrewrite.rewriter.kinds import Kind, Proposal

HELPERS = {"_eqrw_test_abs": ("""
def _eqrw_test_abs(x):
    return x.abs()
""", ("_eqrw_compiling",))}


class AbsHelper(Kind):
    name = "test_abs"
    node_types = (ast.Call,)

    def propose(self, node, context):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "abs" and not node.args:
            return Proposal("_eqrw_test_abs($x)", {"x": node.func.value},
                            helpers=frozenset({"_eqrw_test_abs"}))
        return None
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``extra_kinds`` on sys.path: two kind modules and one without kinds."""
    root = tmp_path / "extra_kinds"
    root.mkdir()
    (root / "__init__.py").write_text('"""Test kinds."""\n')
    (root / "zeta.py").write_text(ABS_KIND)
    (root / "alpha.py").write_text(textwrap.dedent('''
        """Two kinds in one module, and an imported one that is not its own."""
        from eqrewrite.rewriter.kinds import Kind
        from eqrewrite.rewriter.kinds.graphbreaks.select import Select

        class Second(Kind):
            name = "second"

        class First(Kind):
            name = "first"

        class Unnamed(Kind):
            pass
    '''))
    (root / "shared.py").write_text('"""Proofs shared by kinds: no kind here."""\nX = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "extra_kinds"
    for name in [n for n in sys.modules if n.split(".")[0] == "extra_kinds"]:
        del sys.modules[name]  # the next test's package lives in another folder


def test_a_new_kind_module_is_discovered_in_module_then_source_order(package):
    found, found_helpers = kinds.discover(package)
    assert list(found) == ["second", "first", "test_abs"]
    assert found["test_abs"].__module__ == "extra_kinds.zeta"
    assert list(found_helpers) == ["_eqrw_test_abs"]


def test_the_shipped_kinds_are_all_found():
    assert set(kinds.registry()) == {
        "select", "guard", "defer", "item_scalar", "masked_reduction", "moe_dispatch",
        "moe_grouped_split",
        "scalar_flag", "skip_continue", "mask_scatter", "float_literal",
        "interpolate_size", "setitem_copy", "view_reshape", "transpose_round_trip", "tensor_check",
        "attribute_refresh", "fold_tests", "size_tests_last"}
    assert kinds.registry() is kinds.registry()  # discovered once per process
    # helpers that live beside their kinds join those of helpers.py
    assert set(kinds.helper_sources()) == {
        "_eqrw_item", "_eqrw_masked", "_eqrw_truth", "_eqrw_skip", "_eqrw_mask_scatter",
        "_eqrw_moe_dense", "_eqrw_moe_cheap", "_eqrw_moe_hit", "_eqrw_moe_every",
        "_eqrw_moe_experts", "_eqrw_moe_route", "_eqrw_moe_all_pairs",
        "_eqrw_moe_keep", "_eqrw_moe_expert", "_eqrw_moe_row", "_eqrw_check_tensor_all",
        "_eqrw_moe_counts", "_eqrw_moe_keep_counts", "_eqrw_moe_groups", "_eqrw_moe_grouped",
        "_eqrw_moe_merge",
        "_eqrw_first_true",
        "_eqrw_refresh"}
    assert {"_eqrw_item", "_eqrw_masked", "_eqrw_where"} <= set(helpers.registered())


def test_two_modules_defining_one_kind_name_fail(package, tmp_path):
    (tmp_path / "extra_kinds" / "omega.py").write_text(ABS_KIND)
    with pytest.raises(ImportError, match="'test_abs' is defined twice"):
        kinds.discover(package)


def test_a_discovered_kind_is_usable_from_a_pack_with_its_helper(package, tmp_path, monkeypatch):
    shipped = kinds.discover(kinds.__name__)
    extra = kinds.discover(package)
    monkeypatch.setattr(kinds, "_discovered", lambda _name: (
        {**shipped[0], **extra[0]}, {**shipped[1], **extra[1]}))
    helpers.registered.cache_clear()
    try:
        pack = load_pack(str(write_pack(tmp_path, textwrap.dedent("""\
            rules:
              - id: abs-helper
                description: test
                kind: test_abs
            """))))
        text = rewrite_source("def f(x):\n    return x.abs()\n", pack.rules).text
    finally:
        monkeypatch.undo()
        helpers.registered.cache_clear()
    assert "return _eqrw_test_abs(x)" in text
    assert "def _eqrw_test_abs(x):" in text and "def _eqrw_compiling()" in text
