"""Kinds register themselves: a module in the kinds package is found without a central list,
each shipped one named after its kind; the helpers a kind calls live in a helper file."""

from __future__ import annotations

import sys
import textwrap

import pytest
from eqrewrite.rewriter import kinds
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting import helpers
from eqrewrite.rewriter.rewriting.engine import rewrite_source

from tests.conftest import write_pack

# A kind that turns `x.abs()` into a helper call; the helper's code is ABS_HELPER.
ABS_KIND = '''
"""A kind made for the test."""
import ast

from eqrewrite.rewriter.kinds import Kind, Proposal


class AbsHelper(Kind):
    name = "test_abs"
    node_types = (ast.Call,)

    def propose(self, node, context):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "abs" and not node.args:
            return Proposal("_eqrw_test_abs($x)", {"x": node.func.value},
                            helpers=frozenset({"_eqrw_test_abs"}))
        return None
'''

# Its helper file, beside the shipped ones: it needs `_eqrw_compiling` because it reads it.
ABS_HELPER = '''"""The test_abs kind's helper."""

from .shared import _eqrw_compiling

__all__ = ["_eqrw_test_abs"]


def _eqrw_test_abs(x):
    return x.abs() if _eqrw_compiling() else abs(x)
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
    found = kinds.discover(package)
    assert list(found) == ["second", "first", "test_abs"]
    assert found["test_abs"].__module__ == "extra_kinds.zeta"


def test_the_shipped_kinds_are_all_found():
    assert set(kinds.registry()) == {
        "select", "guard", "defer", "item_scalar", "masked_reduction", "moe_dispatch",
        "moe_grouped_split", "any_guarded_writes",
        "scalar_flag", "skip_continue", "mask_scatter", "float_literal",
        "interpolate_size", "setitem_copy", "view_reshape", "transpose_round_trip", "tensor_check",
        "attribute_refresh", "fold_tests", "size_tests_last", "numpy_flag", "row_selection",
        "masked_cross_entropy", "compile_only_skip"}
    assert kinds.registry() is kinds.registry()  # discovered once per process


def test_each_shipped_kind_module_is_named_after_its_kind():
    for name, kind in kinds.registry().items():
        assert kind.__module__.rpartition(".")[2] == name, kind.__module__


def test_two_modules_defining_one_kind_name_fail(package, tmp_path):
    (tmp_path / "extra_kinds" / "omega.py").write_text(ABS_KIND)
    with pytest.raises(ImportError, match="'test_abs' is defined twice"):
        kinds.discover(package)


def test_a_discovered_kind_is_usable_from_a_pack_with_its_helper(package, tmp_path, monkeypatch):
    shipped = kinds.discover(kinds.__name__)
    extra = kinds.discover(package)
    monkeypatch.setattr(kinds, "_discovered", lambda _name: {**shipped, **extra})
    (tmp_path / "extra_helpers").mkdir()
    (tmp_path / "extra_helpers" / "test_abs.py").write_text(ABS_HELPER)
    both = helpers.read_helpers([helpers.shipped(), tmp_path / "extra_helpers"])
    monkeypatch.setattr(helpers, "registered", lambda: both)
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
    assert "return _eqrw_test_abs(x)" in text
    assert "def _eqrw_test_abs(x):" in text and "def _eqrw_compiling()" in text
