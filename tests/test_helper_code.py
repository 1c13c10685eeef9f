"""The helpers' code is read from ``rules/helpers/``: text as inserted, dependencies
derived from the names each helper reads, clear errors for a file that breaks the layout."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from eqrewrite.rewriter import kinds
from eqrewrite.rewriter.analysis.knowledge import SCRIPTED_EXCEPTIONS
from eqrewrite.rewriter.rewriting import helpers
from eqrewrite.rewriter.rewriting.helpers import HelperCodeError, read_helpers

FOLDER = Path(str(helpers.shipped()))

WHERE = '''
def _eqrw_where(condition, if_true, if_false):
    """``if_true if condition else if_false``; traced as torch.where when that is exact."""
    if (_eqrw_compiling() and isinstance(condition, _eqrw_torch.Tensor)
            and isinstance(if_true, _eqrw_torch.Tensor)
            and isinstance(if_false, _eqrw_torch.Tensor)
            and condition.numel() == 1 and if_true.shape == if_false.shape
            and if_true.dtype == if_false.dtype and if_true.device == if_false.device):
        return _eqrw_torch.where(condition.reshape(()) != 0, if_true, if_false)
    return if_true if condition else if_false
'''


def test_a_helper_reads_as_its_pinned_text():
    assert helpers.registered()["_eqrw_where"] == (WHERE, ("_eqrw_compiling",))
    assert helpers.preamble() == "import typing as _eqrw_typing\n\nimport torch as _eqrw_torch\n"


def test_dependencies_are_the_helpers_the_code_reads_in_reading_order():
    found = helpers.registered()
    assert found["_eqrw_select"].needs == ("_eqrw_compiling", "_eqrw_where")
    # Named in its docstring only: `_eqrw_item` is not needed.
    assert found["_eqrw_truth"].needs == ("_eqrw_compare",)
    assert found["_eqrw_moe_keep"].needs == (
        "_eqrw_moe_expert", "_eqrw_moe_dense", "_eqrw_moe_all_pairs")
    # `_eqrw_ready` belongs to `_eqrw_snap` (not in `__all__`): reading it needs `_eqrw_snap`.
    assert found["_eqrw_print"].needs == ("_eqrw_compiling", "_eqrw_snap")
    assert helpers.closure({"_eqrw_print", "_eqrw_snap"}) == [
        "_eqrw_compiling", "_eqrw_snap", "_eqrw_print"]


def test_functions_not_listed_travel_with_the_helper_above():
    found = helpers.registered()
    for companion, owner in [("_eqrw_print_now", "_eqrw_print"), ("_eqrw_ready", "_eqrw_snap"),
                             ("_eqrw_exact_in", "_eqrw_compare"), ("_eqrw_raise", "_eqrw_check")]:
        assert companion not in found
        assert f"\ndef {companion}(" in found[owner].source
    assert found["_eqrw_compare"].source.endswith(
        "\n\n\n_eqrw_exact_in._dynamo_marked_constant = True\n")
    assert "\n@_eqrw_torch.jit.unused\ndef _eqrw_raise(" in found["_eqrw_check"].source


def test_the_inserted_text_fills_the_scripted_raises_and_drops_mypys_ignores():
    check = helpers.registered()["_eqrw_check"].source
    assert "{SCRIPTED_RAISES}" in (FOLDER / "guard.py").read_text()
    assert "SCRIPTED_RAISES" not in check and "# type: ignore" not in check
    raises = "".join(f"            if error == {name!r}:\n                raise {name}(text)\n"
                     for name in SCRIPTED_EXCEPTIONS)
    assert ('            text = "" if message is None else message\n' + raises
            + "            raise RuntimeError(text)\n") in check
    assert "    if _eqrw_torch.jit.is_scripting():\n" in check  # its ignore left out


def test_a_further_blank_line_before_the_next_helper_is_the_helpers_own():
    # What rewritten modules have always had after `_eqrw_moe_experts`.
    assert helpers.registered()["_eqrw_moe_experts"].source.endswith(
        "    return list(range(experts))\n\n")


def test_every_helper_block_is_valid_python():
    every = helpers.closure(set(helpers.registered()))
    tree = ast.parse(helpers.source_of(every, with_preamble=True))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert set(every) <= defined


def test_each_helper_file_is_shared_or_named_after_a_kind():
    stems = {p.stem for p in FOLDER.glob("*.py")} - {"__init__", "shared"}
    assert stems and stems <= set(kinds.registry())


# -- errors ------------------------------------------------------------------------------------

GOOD = '''"""Helpers of a test."""

from .shared import _eqrw_compiling

__all__ = ["_eqrw_test_one"]


def _eqrw_test_one(x):
    return x if _eqrw_compiling() else -x
'''


def read(tmp_path: Path, **files: str) -> dict[str, helpers.Helper]:
    """The helpers of the shipped files and of ``files`` (name -> text)."""
    folder = tmp_path / "extra"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    return read_helpers([helpers.shipped(), folder])


def test_a_good_extra_file_is_read_with_the_shipped_ones(tmp_path):
    found = read(tmp_path, one=GOOD)
    assert found["_eqrw_test_one"].needs == ("_eqrw_compiling",)
    assert found["_eqrw_test_one"].source == (
        "\ndef _eqrw_test_one(x):\n    return x if _eqrw_compiling() else -x\n")


@pytest.mark.parametrize(("text", "message"), [
    (GOOD.replace("return x if", "return x iff"), r"extra/bad.py: not valid Python"),
    (GOOD.replace("_eqrw_compiling()", "_eqrw_nowhere()"),
     r"extra/bad.py: _eqrw_test_one reads _eqrw_nowhere, which no helper file defines"),
    (GOOD.replace('__all__ = ["_eqrw_test_one"]\n', ""), r"extra/bad.py: no `__all__`"),
    (GOOD.replace('["_eqrw_test_one"]', '["_eqrw_test_one", "_eqrw_gone"]'),
     r"lists _eqrw_gone, which it does not define"),
    (GOOD.replace("_eqrw_test_one", "test_one"), r"test_one must start with '_eqrw_'"),
    (GOOD.replace("\n\ndef _eqrw_test_one", "\n\ndef _eqrw_before():\n    pass\n\n\n"
                  "def _eqrw_test_one"), r"one above the first belongs to none"),
    (GOOD + "\n\nimport math\n", r"imports go above the helpers"),
    (GOOD.replace("\n\n\ndef", "\nLIMIT = 3\n\n\ndef"),
     r"above the helpers stand only the docstring, imports and `__all__`"),
    (GOOD.replace("from .shared import", "import os\nfrom .shared import"),
     r"a helper file imports only other helper files"),
    (GOOD.replace("-x\n", "-x  # type: ignore\n"), r"`# type: ignore` that is not"),
    (GOOD.replace("_eqrw_test_one", "_eqrw_where"),
     r"extra/bad.py: _eqrw_where is defined twice \(also in helpers/select.py\)"),
])
def test_a_broken_helper_file_says_what_is_wrong(tmp_path, text, message):
    with pytest.raises(HelperCodeError, match=message):
        read(tmp_path, bad=text)


def test_helpers_that_need_each_other_are_refused(tmp_path):
    text = '''
        __all__ = ["_eqrw_test_a", "_eqrw_test_b"]


        def _eqrw_test_a():
            return _eqrw_test_b()


        def _eqrw_test_b():
            return _eqrw_test_a()
        '''
    with pytest.raises(HelperCodeError, match="_eqrw_test_a -> _eqrw_test_b -> _eqrw_test_a"):
        read(tmp_path, cycle=text)
