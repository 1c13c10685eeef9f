"""Engine properties: formatting kept, fixed point, idempotence, suppressions, scopes, guards."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import (
    RewriteError,
    RewriteOptions,
    rewrite_source,
    select_rules,
)

from tests.conftest import rewrite, write_pack


def pack_rules(tmp_path, body: str):
    """Load a one-off pack written from ``body``."""
    return load_pack(str(write_pack(tmp_path, body))).rules


def test_formatting_and_comments_outside_edits_are_kept(default_rules):
    source = textwrap.dedent('''\
        """Docstring."""
        import torch


        # A comment that must stay.
        def f(x: torch.Tensor,   y: torch.Tensor):  # odd spacing kept
            z  =  x + y   # trailing comment kept

            return (
                z  # inside parentheses
            )
        ''')
    out = rewrite(source, default_rules)
    assert out == source.replace("x + y", "torch.add(x, y)")


def test_nested_matches_reach_fixed_point_in_one_run(default_rules):
    source = """
        import torch
        def f(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor):
            return a + b * c - d ** 0.5 / 2
    """
    out = rewrite(source, default_rules, unsafe=True)
    assert "return torch.sub(torch.add(a, torch.mul(b, c)), torch.div(torch.sqrt(d), 2))" in out
    assert rewrite(out, default_rules, unsafe=True) == out


def test_strings_lists_and_ints_are_never_rewritten(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(name: str, xs: list, n: int, x: torch.Tensor):
            a = "s" + name
            b = [1] + xs
            c = n // 2 + n % 3 - -n
            d = xs * 2
            return a, b, c, d, x.shape[0] + 1
    """)
    assert rewrite(source, default_rules) == source


def test_unknown_operands_are_left_alone(default_rules):
    source = "def f(a, b):\n    return a + b\n"
    assert rewrite(source, default_rules) == source


def test_assume_tensor_params_option(default_rules):
    source = textwrap.dedent("""
        from torch import nn
        class M(nn.Module):
            def forward(self, x, y):
                return x + y
    """)
    assert rewrite(source, default_rules) == source
    out = rewrite(source, default_rules, assume_tensor_params=True)
    assert "return torch.add(x, y)" in out and out.startswith("\nimport torch\n")


def test_parenthesised_operand_and_method_on_result(default_rules):
    out = rewrite("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            return (a + b).sum() + (a)
    """, default_rules)
    assert "return torch.add(torch.add(a, b).sum(), a)" in out


def test_comment_in_parentheses_of_an_operand_is_not_lost(default_rules):
    out = rewrite("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            return (a + b).sum() + (  # why
                a)
    """, default_rules)
    assert "return torch.add(a, b).sum() + (  # why\n        a)" in out


def test_comment_inside_matched_expression_blocks_the_edit(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            return (a +  # keep me
                    b)
    """)
    assert rewrite(source, default_rules) == source


def test_comment_inside_an_operand_on_the_first_line_is_carried_along(default_rules):
    # The comment sits on the edit's first line, inside the operand torch.relu(...): kept.
    source = textwrap.dedent("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            return a + torch.relu(  # keep me
                b)
    """)
    assert rewrite(source, default_rules) == source.replace(
        "a + torch.relu(  # keep me\n        b)",
        "torch.add(a, torch.relu(  # keep me\n        b))")


def test_a_hash_inside_a_string_is_not_a_comment(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(a: torch.Tensor):
            return a + torch.tensor(len("#"))
    """)
    assert rewrite(source, default_rules) == source.replace(
        'a + torch.tensor(len("#"))', 'torch.add(a, torch.tensor(len("#")))')


def test_ignore_comments(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            c = a + b  # eqrewrite: ignore
            d = a + b  # eqrewrite: ignore[add-to-torch-add]
            e = a + b  # eqrewrite: ignore[mul-to-torch-mul]
            return c, d, e
    """)
    out = rewrite(source, default_rules)
    assert out == source.replace("e = a + b", "e = torch.add(a, b)")


def test_import_added_after_docstring_and_future_imports(default_rules):
    out = rewrite('''
        """Doc."""
        from __future__ import annotations
        from torch import Tensor
        def f(x: Tensor):
            return -x
    ''', default_rules)
    assert out.startswith('\n"""Doc."""\nfrom __future__ import annotations\nimport torch\n'
                          'from torch import Tensor\n')
    assert "return torch.neg(x)" in out


def test_alias_of_torch_is_used(default_rules):
    out = rewrite("""
        import torch as T
        def f(x: T.Tensor):
            return x * 2
    """, default_rules)
    assert "return T.mul(x, 2)" in out and "import torch\n" not in out


def test_local_variable_named_torch_blocks_the_edit(default_rules):
    source = textwrap.dedent("""
        from torch import Tensor
        def f(x: Tensor, torch):
            return x * 2
    """)
    assert rewrite(source, default_rules) == source


def test_condition_context(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(x: torch.Tensor):
            while not x.all() and not x.any():
                pass
            flag = not x.any()
            return flag
    """)
    out = rewrite(source, default_rules, only={"not-to-logical-not"})
    assert "while torch.logical_not(x.all()) and torch.logical_not(x.any()):" in out
    assert "flag = not x.any()" in out


def test_unsafe_rules_need_opt_in(default_rules):
    source = "import torch\ndef f(x: torch.Tensor):\n    return not x.any()\n"
    assert rewrite(source, default_rules) == source
    assert "torch.logical_not(x.any())" in rewrite(source, default_rules, unsafe=True)


def test_augmented_assignment_only_on_plain_tensor_names(default_rules):
    out = rewrite("""
        import torch
        def f(x: torch.Tensor, xs: list):
            x += 1; y = 2
            xs += [1]
            x[0] += 1
            return x
    """, default_rules)
    assert "x = x.add_(1); y = 2" in out
    assert "xs += [1]" in out and "x[0] += 1" in out


QUALIFIED = """\
rules:
  - id: where-to-select
    description: test rule
    pattern: torch.where($c, $a, $b)
    rewrite: torch.lerp($b, $a, $c)
"""


def test_pattern_names_match_by_qualified_name(tmp_path):
    rules = pack_rules(tmp_path, QUALIFIED)
    out = rewrite("""
        import torch as T
        from torch import where
        import numpy as np
        def f(c, a, b):
            return T.where(c, a, b), where(c, a, b), np.where(c, a, b)
    """, rules)
    assert "T.lerp(b, a, c), T.lerp(b, a, c)" in out
    assert "np.where(c, a, b)" in out and "import torch\n" not in out


SEQUENCE = """\
rules:
  - id: print-to-log
    description: test rule
    pattern: print($$$args)
    rewrite: log.info("%s", $$$args)
"""


def test_sequence_metavariables(tmp_path):
    out = rewrite("""
        def f(x):
            print(x, 1, sep=" ")
            print()
    """, pack_rules(tmp_path, SEQUENCE))
    assert 'log.info("%s", x, 1, sep=" ")' in out and 'log.info("%s")' in out


SCOPED = """\
rules:
  - id: neg-forward
    description: test rule
    pattern: -$a
    rewrite: torch.neg($a)
    scope: {scope}
    where:
      - tensor: $a
"""

SCOPE_SOURCE = """
import torch
from torch import nn
class M(nn.Module):
    def forward(self, x: torch.Tensor):
        return -x
    def other(self, x: torch.Tensor):
        return -x
def helper(x: torch.Tensor):
    return -x
@torch.compile
def compiled(x: torch.Tensor):
    return helper(x) + -x
def plain(x: torch.Tensor):
    return -x
opt = torch.compile(M())
"""


@pytest.mark.parametrize("scope, count", [("everywhere", 5), ("forward", 1), ("compiled", 3)])
def test_scopes(tmp_path, scope, count):
    out = rewrite(SCOPE_SOURCE, pack_rules(tmp_path, SCOPED.format(scope=scope)))
    assert out.count("torch.neg(x)") == count


def test_scope_override_from_options(tmp_path):
    rules = pack_rules(tmp_path, SCOPED.format(scope="everywhere"))
    out = rewrite(SCOPE_SOURCE, rules, scope=frozenset({"forward"}))
    assert out.count("torch.neg(x)") == 1


GUARDED = """\
rules:
  - id: guarded
    description: test rule
    pattern: f($a)
    rewrite: g($a)
    where:
      - {guard}: $a
"""


@pytest.mark.parametrize("guard, argument, fires", [
    ("pure", "torch.exp(x) + x.sum()", True),
    ("pure", "torch.rand(3)", False),
    ("pure", "x.add_(1)", False),
    ("pure", "print(x)", False),
    ("pure", "len(xs) + 1", True),
    ("literal", "-2", True),
    ("literal", "0.5", True),
    ("literal", "n", False),
    ("literal", "True", False),
    ("not_tensor", "n", True),
    ("not_tensor", "'s'", True),
    ("not_tensor", "x", False),
    ("not_tensor", "unknown_thing", False),
    ("scalar", "n * 2", True),
    ("scalar", "xs", False),
    ("tensor", "x @ x", True),
    ("tensor", "n", False),
    ("name", "x", True),
    ("name", "x.T", False),
])
def test_guards(tmp_path, guard, argument, fires):
    source = f"import torch\ndef h(x: torch.Tensor, n: int, xs: list):\n    return f({argument})\n"
    out = rewrite(source, pack_rules(tmp_path, GUARDED.format(guard=guard)))
    assert (out != source) == fires


def test_any_tensor_guard(tmp_path):
    body = GUARDED.replace("- {guard}: $a", "- any_tensor: [$a, $b]").replace(
        "f($a)", "f($a, $b)", 1).replace("g($a)", "g($a, $b)")
    rules = pack_rules(tmp_path, body)
    source = "import torch\ndef h(x: torch.Tensor, n: int):\n    return f(n, x), f(n, n)\n"
    assert rewrite(source, rules).count("g(") == 1


LOOPING = """\
rules:
  - id: swap
    description: test rule
    pattern: $a + $b
    rewrite: $b + $a
    where:
      - tensor: [$a, $b]
"""


def test_non_converging_rules_are_reported(tmp_path):
    rules = pack_rules(tmp_path, LOOPING)
    with pytest.raises(RewriteError, match="failed to converge"):
        rewrite_source("import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n"
                       "    return a + b\n", rules, RewriteOptions())


def test_non_atomic_rewrite_is_parenthesised(tmp_path):
    body = LOOPING.replace("rewrite: $b + $a", "rewrite: $a - -$b").replace(
        "pattern: $a + $b", "pattern: $a * $b")
    out = rewrite("import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n"
                  "    return a * b ** 2\n", pack_rules(tmp_path, body))
    assert "return (a - -(b ** 2))" in out


def test_syntax_error_reports_line():
    with pytest.raises(RewriteError) as caught:
        rewrite_source("x = 1\nprint 'python 2'\n", [])
    assert caught.value.line == 2


def test_edits_record_before_and_after(default_rules):
    result = rewrite_source("import torch\ndef f(x: torch.Tensor):\n    return x ** 0.5\n",
                            default_rules)
    (round_number, edit), = result.edits
    assert (round_number, edit.rule.id, edit.before, edit.after) == (
        1, "pow-half-to-sqrt", "x ** 0.5", "torch.sqrt(x)")
    assert edit.span == (3, 11, 3, 19)


def test_after_of_a_multi_line_edit_is_the_text_written(default_rules):
    # An edit's `after` is what the file holds afterwards, continuation lines indented as
    # written (it used to lose the indentation of the block around the statement).
    source = ("import torch\nclass M:\n    def f(self, x: torch.Tensor):\n"
              "        return -torch.cat(\n            [x, x])\n")
    result = rewrite_source(source, default_rules)
    (_, edit), = result.edits
    assert edit.after == "torch.neg(torch.cat(\n            [x, x]))"
    assert edit.after in result.text


def test_non_ascii_columns(default_rules):
    source = "import torch\ndef f(x: torch.Tensor):\n    s = 'héllo ✓'; return x + 1  # ü\n"
    out = rewrite(source, default_rules)
    assert out == source.replace("x + 1", "torch.add(x, 1)")


def test_crlf_line_endings_survive(default_rules):
    source = "import torch\r\ndef f(x: torch.Tensor):\r\n    return x + 1\r\n"
    out = rewrite_source(source, default_rules).text
    assert out == "import torch\r\ndef f(x: torch.Tensor):\r\n    return torch.add(x, 1)\r\n"


WRAP = """\
rules:
  - id: wrap
    description: test rule
    pattern: f($a)
    rewrite: g($a, 1)
"""


def test_tuple_bindings_keep_their_parentheses(tmp_path):
    rules = pack_rules(tmp_path, WRAP)
    out = rewrite("f((1, 2))\nf(())\n", rules)
    assert out == "g((1, 2), 1)\ng((), 1)\n"


def test_bare_tuple_gains_parentheses_as_an_argument(tmp_path):
    body = WRAP.replace("pattern: f($a)", "pattern: $x += $a").replace(
        "rewrite: g($a, 1)", "rewrite: $x.add_($a)")
    assert rewrite("x += 2, y\n", pack_rules(tmp_path, body)) == "x.add_((2, y))\n"


def test_form_feed_does_not_shift_lines(default_rules):
    source = "import torch\n\x0c\ndef f(x: torch.Tensor):  # \x0b\n    return -x\n"
    assert rewrite(source, default_rules) == source.replace("-x", "torch.neg(x)")


def long_class(method_body: str) -> str:
    filler = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(50))
    return ("import torch\n\n\nclass Big(torch.nn.Module):\n" + filler
            + "    def forward(self, x: torch.Tensor):\n" + method_body + "\n# tail\n")


def test_methods_of_long_classes_are_rewritten_alone(default_rules):
    source = long_class("        y = x + 1  # keep\n        return -y\n")
    out = rewrite(source, default_rules)
    assert out == source.replace("x + 1", "torch.add(x, 1)").replace("-y", "torch.neg(y)")


def units_of(source: str, rules):
    """The units apply.py would parse with libcst for ``source``."""
    import ast

    from eqrewrite.rewriter.matching.matcher import find_edits
    from eqrewrite.rewriter.rewriting.layout import units_with_edits
    from eqrewrite.rewriter.syntax.lines import split_lines

    tree = ast.parse(source)
    return units_with_edits(tree, split_lines(source), find_edits(source, tree, rules))


def parsed_by_libcst(monkeypatch, source: str, rules) -> tuple[str, list[str]]:
    """``source`` rewritten, and the texts libcst parsed to apply the edits."""
    import libcst

    parsed, parse = [], libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda text: parsed.append(text) or parse(text))
    return rewrite_source(source, rules).text, parsed


def test_only_the_statements_holding_edits_are_parsed_with_libcst(default_rules, monkeypatch):
    # One line alone loses its indentation; a statement of several lines in a block
    # parses inside an `if 1:`, keeping its own.
    source = long_class("        y = x + 1  # keep\n        z = (y,\n             -y)\n"
                        "        return z\n")
    out, parsed = parsed_by_libcst(monkeypatch, source, default_rules)
    assert out == source.replace("x + 1", "torch.add(x, 1)").replace("-y", "torch.neg(y)")
    assert parsed == ["y = x + 1  # keep\n", "if 1:\n        z = (y,\n             -y)\n"]


@pytest.mark.parametrize(("body", "unit"), [
    # a statement after `if c:` on the same line is parsed with its `if`
    ("    if x.sum() > 0: y = -x\n    return x\n", "if x.sum() > 0: y = -x\n"),
    # statements sharing a line are parsed together
    ("    a = 1; b = -x\n    return b\n", "a = 1; b = -x\n"),
    # an `elif` cannot be parsed alone: its condition takes the whole `if`
    ("    if x.dim():\n        pass\n    elif -x:\n        pass\n",
     "if 1:\n    if x.dim():\n        pass\n    elif -x:\n        pass\n"),
    # nor can its block (it starts on the `elif` line)
    ("    if x.dim():\n        pass\n    elif x.dim() > 1:\n        y = -x\n",
     "if 1:\n    if x.dim():\n        pass\n    elif x.dim() > 1:\n        y = -x\n"),
    ("    try:\n        pass\n    except E:\n        y = -x\n", "y = -x\n"),
])
def test_smallest_statement_holding_an_edit_is_its_unit(default_rules, monkeypatch, body, unit):
    source = "import torch\ndef f(x: torch.Tensor):\n" + body
    out, parsed = parsed_by_libcst(monkeypatch, source, default_rules)
    assert out == source.replace("-x", "torch.neg(x)")
    assert parsed == [unit]


def test_whitespace_only_lines_inside_a_rewritten_statement_are_kept(default_rules):
    # (a method of a long class used to be dedented and indented again, which emptied
    # a line holding only the method's indentation)
    source = long_class("        y = torch.cat([\n    \n            -x])\n        return y\n")
    out = rewrite_source(source, default_rules).text
    assert out == source.replace("-x", "torch.neg(x)")


def test_undedentable_method_is_rewritten_in_place(default_rules):
    body = '        doc = """\nflush left\n"""\n        return -x\n'
    source = long_class(body)
    assert rewrite(source, default_rules) == source.replace("-x", "torch.neg(x)")


PREPEND = """\
rules:
  - id: seq
    description: test rule
    pattern: f($$$args)
    rewrite: g(1, $$$args)
"""


@pytest.mark.parametrize(("source", "expected"), [
    # parenthesised arguments keep their parentheses (this used to be an internal error)
    ("f((a), (b + c))\n", "g(1, (a), (b + c))\n"),
    # a generator that was the only argument needs its own parentheses among others
    ("f(x for x in y)\n", "g(1, (x for x in y))\n"),
    ("f(a , k = (1), *r, **kw)\n", "g(1, a, k = (1), *r, **kw)\n"),
])
def test_sequence_arguments_are_copied_as_written(tmp_path, source, expected):
    assert rewrite(source, pack_rules(tmp_path, PREPEND)) == expected


def test_sequence_keeps_a_closing_parenthesis_on_its_own_line(tmp_path):
    source = 'f(\n    "a",\n    b\n)\nf(\n    a,\n)\n'
    assert rewrite(source, pack_rules(tmp_path, PREPEND)) == 'g(1, "a", b\n)\ng(1, a)\n'


def test_statement_starting_with_a_parenthesis_after_a_call(default_rules):
    source = ("import torch\ndef f(a: torch.Tensor):\n    g(a)\n    (a + a).sum()\n"
              "    with (\n        a + a\n    ):\n        pass\n")
    assert rewrite(source, default_rules) == source.replace("(a + a)", "torch.add(a, a)").replace(
        "        a + a\n", "        torch.add(a, a)\n")


def test_comment_in_parentheses_around_a_rewritten_expression_is_kept(default_rules):
    source = textwrap.dedent("""
        import torch
        def f(a: torch.Tensor, b: torch.Tensor):
            return (  # why
                a + b)
    """)
    assert rewrite(source, default_rules) == source.replace("a + b", "torch.add(a, b)")


def test_class_is_parsed_statement_by_statement(default_rules):
    source = long_class("        return -x\n")
    (unit, edits), = units_of(source, default_rules)
    assert unit.indent == "        " and unit.end == unit.start and len(edits) == 1


NESTED = ("import torch\n\n\ndef f(x: torch.Tensor, flag: bool):\n    for i in range(2):\n"
          "        if flag:\n            y = x + 1\n        else:\n            y = -x\n"
          "{tail}    return y\n")


@pytest.mark.parametrize("tail, indents", [
    ("", ["            ", "            "]),               # both blocks of the if, alone
    ("        # note\n", ["            ", "            "]),
])
def test_blocks_of_compound_statements_are_parsed_alone(default_rules, tail, indents):
    source = NESTED.format(tail=tail)
    assert [u.indent for u, _ in units_of(source, default_rules)] == indents
    assert rewrite(source, default_rules) == source.replace("x + 1", "torch.add(x, 1)").replace(
        "-x", "torch.neg(x)")


@pytest.mark.parametrize("source, indent", [
    # a block on its header's line cannot be cut out: the whole statement is parsed
    ("import torch\ndef f(x: torch.Tensor, flag: bool):\n    if flag: return -x\n"
     "    return x\n", "    "),
    # elif: the else block starts on the `elif` line
    ("import torch\ndef f(x: torch.Tensor, a: bool, b: bool):\n    if a:\n        return x\n"
     "    elif b:\n        return -x\n    return x\n", "    "),
    # a continuation line with less indentation than its block
    ("import torch\ndef f(x: torch.Tensor):\n    y = (x +\n1)\n    return y\n", ""),
])
def test_statements_that_cannot_be_cut_out_fall_back_outwards(default_rules, source, indent):
    units = units_of(source, default_rules)
    assert [u.indent for u, _ in units] == [indent]
    out = rewrite(source, default_rules)
    assert out != source and compile(out, "out", "exec")


def test_import_goes_after_coding_cookie_and_header(default_rules):
    source = ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# License.\n"
              "from torch import Tensor\ndef f(x: Tensor):\n    return -x\n")
    out = rewrite(source, default_rules)
    assert out.startswith("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# License.\n"
                          "import torch\nfrom torch import Tensor\n")


def test_statements_sharing_a_line(default_rules):
    source = "import torch\nx = torch.ones(2); y = x + 1; z = -x\n"
    assert rewrite(source, default_rules) == (
        "import torch\nx = torch.ones(2); y = torch.add(x, 1); z = torch.neg(x)\n")


def test_forward_scope_reaches_models_built_on_imported_bases(tmp_path):
    rules = pack_rules(tmp_path, SCOPED.format(scope="forward"))
    source = textwrap.dedent("""
        import torch
        from ...modeling_utils import PreTrainedModel
        class T5PreTrainedModel(PreTrainedModel):
            pass
        class T5Stack(T5PreTrainedModel):
            def forward(self, x: torch.Tensor):
                return -x
        class Config:
            def forward(self, x: torch.Tensor):
                return -x
    """)
    assert rewrite(source, rules).count("torch.neg(x)") == 1


@pytest.mark.parametrize("source", [
    # a comprehension variable shadows a tensor of the same name
    "import torch\ndef f(a: list):\n    i = torch.arange(3)\n"
    "    return [(-1) ** i * w for i, w in enumerate(a)]\n",
    "import torch\ndef f(x: torch.Tensor, sizes: list):\n    return [x * 2 for x in sizes]\n",
    # `:=` in a comprehension rebinds the name in the function
    "import torch\ndef f(values: list):\n    t = torch.ones(1)\n"
    "    _ = [(t := v) for v in values]\n    return t * 2\n",
    # a class body's names are its own
    "import torch\nx = torch.ones(3)\nclass Config:\n    x = 4\n    y = x * 2\n",
    # names written through global / nonlocal
    "import torch\nstate = torch.zeros(1)\ndef reset():\n    global state\n    state = 0\n"
    "def step():\n    return state * 2\n",
    "import torch\ndef outer():\n    acc = torch.ones(1)\n    def bump():\n        nonlocal acc\n"
    "        acc = 3\n    bump()\n    return acc * 2\n",
    # functions and layers that do not always return one tensor
    "import torch\ndef f(mask: torch.Tensor):\n    idx = torch.where(mask)\n    return idx * 2\n",
    "import torch\ndef f(x: torch.Tensor):\n    pair = torch.aminmax(x)\n    return pair * 2\n",
    "import torch\ndef f(x: torch.Tensor):\n    m = x.mode()\n    return m * 2\n",
    "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.pre = torch.nn.Identity()\n    def forward(self, factor: float):\n"
    "        return self.pre(factor) * 2\n",
    # x == None is a Python bool
    "import torch\ndef f(x: torch.Tensor):\n    if not (x == None):\n        return 1\n",
    # f"{expr=}" prints the expression's own text
    "import torch\ndef f(x: torch.Tensor):\n    return f\"{x * 2=}\"\n",
])
def test_found_on_torch_sources_left_alone(source, default_rules):
    assert rewrite(source, default_rules) == source


def test_attribute_kinds_do_not_depend_on_what_was_analysed_first(default_rules):
    # The first guard in __init__ used to solve all of __init__'s names at once, and the
    # attributes of the class were then computed with those names unknown, for good.
    source = textwrap.dedent("""
        import torch
        class Scaled:
            def __init__(self, c: torch.Tensor):
                size = c.shape[0]
                self.dim = size
                m = c + 0.5 * (self.dim - 2)
            def f(self, x: torch.Tensor):
                return x * (self.dim - 1)
    """)
    out = rewrite(source, default_rules)
    assert "m = torch.add(c, 0.5 * (self.dim - 2))" in out
    assert "return torch.mul(x, self.dim - 1)" in out


def test_a_local_is_never_mistaken_for_the_global_of_the_same_name(default_rules):
    # Solving `k` reads self.dim, assigned from the local `dim` of the function being
    # solved: that local is unknown at this point, never the module's tensor `dim`.
    source = textwrap.dedent("""
        import torch
        dim = torch.ones(3)
        class Config:
            def __init__(self):
                dim = 4
                self.dim = dim
                k = self.dim
                y = k * 2
            def twice(self):
                return self.dim * 2
    """)
    assert rewrite(source, default_rules) == source


@pytest.mark.parametrize("enabled", [True, False])
def test_garbage_collection_is_left_as_it_was(default_rules, enabled):
    import gc

    (gc.enable if enabled else gc.disable)()
    try:
        rewrite_source("import torch\ndef f(x: torch.Tensor):\n    return -x\n", default_rules)
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_operators_on_decorator_and_continuation_lines_are_found(default_rules, newline):
    # Statements whose lines hold no operator are skipped without being walked: the
    # lines of a statement include its decorators and its continuation lines.
    source = ("import torch\na = torch.ones(2)\n@register(\n    -a)\ndef f():\n    pass\n"
              "b = torch.cat([a,\n               a * 2])\n").replace("\n", newline)
    expected = source.replace("-a)", "torch.neg(a))").replace("a * 2", "torch.mul(a, 2)")
    assert rewrite_source(source, default_rules).text == expected


def test_progress_is_reported_line_by_line_each_round(default_rules):
    source = "".join(f"def f{i}(x: torch.Tensor):\n    return -x\n" for i in range(5))
    seen = []
    rewrite_source("import torch\n" + source, default_rules,
                   progress=lambda round_number, line: seen.append((round_number, line)))
    # Round 2 matches only the statements round 1 changed (narrowing.py): not the import.
    assert seen == [(1, 1), *((1, line) for line in range(2, 12, 2)),
                    *((2, line) for line in range(2, 12, 2))]


def test_application_reports_its_progress_unit_by_unit(default_rules):
    source = "".join(f"def f{i}(x: torch.Tensor):\n    return -x\n" for i in range(3))
    seen = []
    rewrite_source("import torch\n" + source, default_rules,
                   applying=lambda round_number, line: seen.append((round_number, line)))
    assert seen == [(1, 3), (1, 5), (1, 7)]  # each `return` line, in the first round


def test_a_long_file_shows_its_progress_on_a_terminal(tmp_path, monkeypatch, capsys):
    from eqrewrite.rewriter.running import runner
    from eqrewrite.rewriter.workspace.worklist import Work

    path = tmp_path / "long.py"
    path.write_text("import torch\n" + "def f(x: torch.Tensor):\n    return -x\n" * 50)
    monkeypatch.setattr(runner, "LONG_FILE", 100)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    (result,) = runner.run([Work(path)], runner.Job(["default"], mode="check"), None,
                           jobs=1, progress=True)
    err = capsys.readouterr().err
    assert result.status == "changed" and "long file, round 1" in err
    assert "long file, round 1, applying" in err


def test_a_long_files_edits_shared_among_workers_give_the_same_file(tmp_path, monkeypatch):
    """With -j 2 in-process, a long file's units are applied by forked workers: the file
    written, each edit's text and the progress reported are those of the serial run."""
    from eqrewrite.rewriter.rewriting import apply
    from eqrewrite.rewriter.running import runner
    from eqrewrite.rewriter.workspace.worklist import Work

    body = "".join(f"def f{i}(x: torch.Tensor, y: torch.Tensor):\n"
                   f"    # keep {i}\n    return -x + y * {i}\n" for i in range(40))
    monkeypatch.setattr(runner, "LONG_FILE", 100)
    monkeypatch.setattr(apply, "SPREAD_MIN_UNITS", 2)
    appliers = tmp_path / "appliers"
    real_apply = apply._apply_to_unit

    def noted(*args):
        with appliers.open("a") as log:  # forked workers inherit this patched function
            log.write(f"{os.getpid()}\n")
        return real_apply(*args)

    monkeypatch.setattr(apply, "_apply_to_unit", noted)
    outcomes, pids = {}, {}
    for jobs in (1, 2):
        appliers.write_text("")
        path = tmp_path / f"j{jobs}" / "long.py"
        path.parent.mkdir()
        path.write_text("import torch\n" + body)
        (result,) = runner.run([Work(path)], runner.Job(["default"]), None, jobs=jobs)
        outcomes[jobs] = (path.read_text(), [(e.start_line, e.start_col, e.after)
                                             for e in result.edits])
        pids[jobs] = set(appliers.read_text().split())
    assert outcomes[1] == outcomes[2]
    assert "torch.neg(x)" in outcomes[2][0] and "# keep 39" in outcomes[2][0]
    assert pids[1] == {str(os.getpid())}  # -j 1: applied here
    assert pids[2] and str(os.getpid()) not in pids[2]  # -j 2: by the forked workers
    with pytest.raises(apply.ApplyError, match="not forked"):
        apply._apply_chunk((0, 1))  # outside a spread, a worker would have nothing to read


def test_notes_inside_an_edit_are_dropped_and_the_others_kept():
    """A note is superseded exactly when some edit's span holds its position, including a
    long edit that started before a shorter later one (the prefix of furthest ends)."""
    from types import SimpleNamespace

    from eqrewrite.rewriter.matching.matcher import Note
    from eqrewrite.rewriter.rewriting.engine import _outside

    edits = [SimpleNamespace(span=span, settles=None) for span in
             [(2, 0, 9, 4), (3, 0, 3, 5), (12, 4, 12, 10)]]
    notes = [Note("r", line, col, "m") for line, col in
             [(1, 1), (2, 1), (5, 1), (9, 5), (9, 6), (12, 4), (12, 5), (12, 11), (12, 12)]]
    kept = _outside(notes, edits)
    assert [(n.line, n.col) for n in kept] == [(1, 1), (9, 6), (12, 4), (12, 12)]
    assert _outside(notes, []) == notes
    # An edit elsewhere that settles the node a note sits on (a folded elif's test) drops it.
    settling = SimpleNamespace(span=(20, 9, 20, 30), settles=(12, 12))
    assert [(n.line, n.col) for n in _outside(notes, [*edits, settling])] == [
        (1, 1), (9, 6), (12, 4)]


@pytest.mark.parametrize("seed", range(3))
def test_lines_are_split_where_ast_counts_a_new_line(seed):
    # \r\n, \r and \n end a line; \f, \v, \x1c, \x85 and \u2028 (str.splitlines) do not.
    import random
    import re

    from eqrewrite.rewriter.syntax.lines import split_lines

    def reference(text: str) -> list[str]:
        parts = re.split(r"(\r\n|\r|\n)", text)
        return [a + b for a, b in zip(parts[::2], parts[1::2] + [""], strict=True)]

    rng = random.Random(seed)
    pieces = ["x", " ", "\n", "\r", "\r\n", "\f", "\v", "\x1c", "\x85", "\u2028"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert split_lines(text) == reference(text), repr(text)


ELIF = textwrap.dedent('''
    import torch


    def pick(x: torch.Tensor, mask: torch.Tensor):
        left = torch.any(mask[:, 0] == 0)
        right = torch.any(mask[:, -1] == 0)
        if left and not right:
            y = x + 1
        elif not left and right:
            y = x - 1
        else:
            y = x
        return y


    def check(x: torch.Tensor, flag: bool):
        if flag:
            x = x * 2
        elif (x < 0).any():
            raise ValueError("negative")
        return x
''')


def test_an_elif_rewritten_into_a_statement_stays_the_else_branch():
    # The select and guard kinds replace an `elif` (an `if` inside the `else`) by a plain
    # statement; printed after the outer `if`, it ran whatever that `if` decided.
    import torch

    options = RewriteOptions(scope=frozenset({"everywhere"}))
    text = rewrite_source(ELIF, select_rules(load_pack("graphbreaks").rules, options),
                          options).text
    assert "_eqrw_where(" in text and "_eqrw_check(" in text and "else:" in text
    original, rewritten = {}, {}
    exec(compile(ELIF, "<original>", "exec"), original)
    exec(compile(text, "<rewritten>", "exec"), rewritten)
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for mask in ([[0, 1], [1, 1]], [[1, 0], [1, 1]], [[1, 1], [1, 1]]):
        expected = original["pick"](x, torch.tensor(mask))
        assert torch.equal(rewritten["pick"](x, torch.tensor(mask)), expected), mask
    # The chain is taken whole in one run: the outer `if` around the inner select too.
    assert "y = _eqrw_where(left & (~right), x + 1, _eqrw_where(" in text, text
    torch._dynamo.reset()
    assert torch._dynamo.explain(rewritten["pick"])(x, torch.tensor(mask)).graph_break_count == 0
    negative = torch.tensor([-1.0])
    assert torch.equal(rewritten["check"](negative, True), torch.tensor([-2.0]))
    with pytest.raises(ValueError, match="negative"):
        rewritten["check"](negative, False)


def test_each_node_gets_the_first_rule_whose_scope_holds_there(tmp_path):
    # Two rules share a pattern; the first holds only in `forward`. Outside it the second
    # applies; inside, the first (rules are tried in order, those out of scope skipped).
    rules = pack_rules(tmp_path, """
        rules:
          - id: in-forward
            description: only in forward
            pattern: $x.sub($y)
            rewrite: $x - $y
            scope: [forward]
          - id: everywhere
            description: anywhere
            pattern: $x.sub($y)
            rewrite: sub($x, $y)
        """)
    source = textwrap.dedent("""\
        from torch import nn


        def helper(a, b):
            return a.sub(b)


        class M(nn.Module):
            def forward(self, a, b):
                def inner(c):
                    return c.sub(b)
                return a.sub(b) + inner(a)


        def _eqrw_kept(a, b):
            return a.sub(b)
        """)
    text = rewrite_source(source, rules).text
    assert "return sub(a, b)" in text  # helper: the second rule
    assert "return (c - b)" in text and "return (a - b) + inner(a)" in text  # in forward
    assert text.endswith("def _eqrw_kept(a, b):\n    return a.sub(b)\n")  # never rewritten


def test_the_walk_enters_an_unscoped_definition_only_for_scoped_code_inside(tmp_path):
    # Traced: a function nested in an untraced one, and a method of an untraced class. The
    # walk skips definitions with no scoped code inside, and must still find these; and a
    # lambda compiled inside an untraced function is in the compiled scope.
    rules = pack_rules(tmp_path, """
        rules:
          - id: sub-op
            description: sub as an operator
            pattern: $x.sub($y)
            rewrite: $x - $y
            scope: [traced, compiled]
        """)
    source = textwrap.dedent("""\
        def outer(a, b):
            def inner(c):
                return c.sub(b)
            return a.sub(b), inner


        class Holder:
            def untraced(self, a, b):
                return a.sub(b)

            def traced(self, a, b):
                return a.sub(b)
        """)
    scopes = {"traced": frozenset({"outer.<locals>.inner", "Holder.traced"})}
    text = rewrite_source(source, rules, RewriteOptions(function_scopes=scopes)).text
    assert "return (c - b)" in text and "return a.sub(b), inner" in text
    assert text.count("return (a - b)") == 1 and "return a.sub(b)\n\n    def traced" in text
    compiled = textwrap.dedent("""\
        import torch


        def builder(b):
            fast = torch.compile(lambda a: a.sub(b))
            return fast, b.sub(b)
        """)
    text = rewrite_source(compiled, rules, RewriteOptions(function_scopes={})).text
    assert "lambda a: (a - b))" in text and "return fast, b.sub(b)" in text
