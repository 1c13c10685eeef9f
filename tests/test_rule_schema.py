"""Rule packs are validated on load with errors naming file, line and cause."""

from __future__ import annotations

import pytest
from eqrewrite.rewriter.matching.rules import RuleError, load_pack

from tests.conftest import write_pack

GOOD_RULE = """\
rules:
  - id: add-to-torch-add
    description: plus
    pattern: $a + $b
    rewrite: torch.add($a, $b)
    where:
      - tensor: $a
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return x + 1
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.add(x, 1)
"""


def error_for(tmp_path, body: str) -> RuleError:
    path = write_pack(tmp_path, body)
    with pytest.raises(RuleError) as caught:
        load_pack(str(path))
    return caught.value


def test_good_pack_loads(tmp_path):
    pack = load_pack(str(write_pack(tmp_path, GOOD_RULE)))
    rule = pack.rules[0]
    assert rule.id == "add-to-torch-add"
    assert rule.pattern.binds == {"a": False, "b": False}
    assert rule.rewrite_roots == {"torch"}
    assert len(pack.digest) == 64


def test_unknown_key_names_line_and_choices(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("    where:", "    wehre:"))
    assert error.line == 6 and error.col == 5
    assert "unknown key 'wehre'" in str(error) and "where" in str(error)
    assert str(error).startswith(str(tmp_path / "pack.yaml") + ":6:5:")


def test_rewrite_metavariable_not_bound(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("torch.add($a, $b)", "torch.add($a, $c)"))
    assert error.line == 5
    assert "$c" in error.message and "does not bind" in error.message


def test_pattern_that_does_not_parse(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("pattern: $a + $b", "pattern: $a + + )"))
    assert error.line == 4
    assert "does not parse" in error.message


def test_block_pattern_error_points_into_the_block(tmp_path):
    body = GOOD_RULE.replace("    pattern: $a + $b", "    pattern: |\n      $a +\n      )")
    error = error_for(tmp_path, body)
    assert error.line in (5, 6)
    assert "pattern" in error.message


def test_unknown_guard(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("- tensor: $a", "- tensorish: $a"))
    assert error.line == 7 and "tensorish" in error.message


def test_guard_on_unbound_metavariable(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("- tensor: $a", "- tensor: $z"))
    assert "$z is not bound" in error.message


def test_guard_argument_must_be_metavariable(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("- tensor: $a", "- tensor: a"))
    assert "metavariables like $a" in error.message


def test_bad_safety_value(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("    where:", "    safety: maybe\n    where:"))
    assert "safe, unsafe" in error.message and error.line == 6


def test_bad_scope_value(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("    where:", "    scope: kernels\n    where:"))
    assert "compiled, everywhere, forward" in error.message


def test_duplicate_ids(tmp_path):
    rule = GOOD_RULE.split("rules:\n", 1)[1]
    error = error_for(tmp_path, GOOD_RULE + rule)
    assert "duplicate rule id 'add-to-torch-add'" in error.message


def test_bad_id(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("id: add-to-torch-add", "id: Add To"))
    assert "lower-case" in error.message


def test_missing_required_key(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("    description: plus\n", ""))
    assert "missing required key 'description'" in error.message


def test_invalid_yaml_reports_position(tmp_path):
    error = error_for(tmp_path, "rules:\n  - id: [unclosed\n")
    assert error.line >= 2 and "invalid YAML" in error.message


def test_yaml_cannot_execute_code(tmp_path):
    tag = '!!python/object/apply:os.system ["true"]'
    body = GOOD_RULE.replace("description: plus", f"description: {tag}")
    error = error_for(tmp_path, body)
    assert "invalid YAML" in error.message or "expected a string" in error.message


def test_empty_pack(tmp_path):
    assert "empty rule pack" in error_for(tmp_path, "").message
    assert "non-empty list" in error_for(tmp_path, "rules: []\n").message


def test_example_shape(tmp_path):
    body = GOOD_RULE.replace("        after: |", "        unchanged: |", 1)
    error = error_for(tmp_path, body)
    assert "either 'before' with 'after'" in error.message


def test_lone_metavariable_pattern_refused(tmp_path):
    error = error_for(tmp_path, GOOD_RULE.replace("pattern: $a + $b", "pattern: $a"))
    assert "every expression" in error.message


def test_sequence_metavariable_only_in_calls(tmp_path):
    body = GOOD_RULE.replace("pattern: $a + $b", "pattern: $a + $$$b")
    assert "call arguments" in error_for(tmp_path, body).message


def test_statement_rewrite_for_expression_pattern(tmp_path):
    body = GOOD_RULE.replace("rewrite: torch.add($a, $b)", "rewrite: $a = $b")
    assert "needs an expression rewrite" in error_for(tmp_path, body).message


def test_unknown_pack_name_lists_packaged():
    with pytest.raises(RuleError) as caught:
        load_pack("no-such-pack")
    assert "default.yaml" in str(caught.value)


def test_packaged_pack_by_name_and_file_name():
    assert load_pack("default").digest == load_pack("default.yaml").digest


def test_a_pack_is_parsed_once_per_content(tmp_path, monkeypatch):
    from eqrewrite.rewriter.matching import rules as rules_module

    parsed: list[str] = []
    original = rules_module._parse_pack

    def counting(shown, data):  # type: ignore[no-untyped-def]
        parsed.append(shown)
        return original(shown, data)

    monkeypatch.setattr(rules_module, "_parse_pack", counting)
    pack = write_pack(tmp_path, GOOD_RULE)
    first, second = load_pack(str(pack)), load_pack(str(pack))
    assert len(parsed) == 1 and first.rules == second.rules
    assert first.rules is not second.rules  # each caller gets its own list
    write_pack(tmp_path, GOOD_RULE.replace("add-to-torch-add", "renamed"))  # edited
    assert [r.id for r in load_pack(str(pack)).rules] == ["renamed"] and len(parsed) == 2
    broken = write_pack(tmp_path, GOOD_RULE.replace("pattern:", "patern:"), "broken.yaml")
    for _ in range(2):  # a bad pack is never kept: each load reports it
        with pytest.raises(RuleError):
            load_pack(str(broken))
