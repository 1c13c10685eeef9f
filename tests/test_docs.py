"""Docs generated from the packs: README tables, docs/rules.md and the pack JSON Schema.

The drift check (``eqrewrite rules docs --check``) runs here, so CI fails when a pack
changes without its documentation; the schema is checked against the loader on shipped
packs and on broken ones.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from eqrewrite.rewriter.api import load_pack, packaged_packs
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.matching import rules as loader
from eqrewrite.rewriter.matching.rules import RuleError
from eqrewrite.rewriter.reporting import docs

from tests.conftest import write_pack
from tests.test_rule_schema import GOOD_RULE

ROOT = Path(__file__).resolve().parent.parent
PACKS = [load_pack(str(path)) for _, path in sorted(packaged_packs().items())]
SCHEMA = json.loads((ROOT / docs.SCHEMA).read_text(encoding="utf-8"))


def test_generated_docs_are_up_to_date():
    """The CI drift check: regenerate with ``eqrewrite rules docs`` when this fails."""
    result = CliRunner().invoke(main, ["rules", "docs", "--check"])
    assert result.exit_code == 0, result.output
    assert result.output == ""


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the generated files and README, as a checkout to run the command on."""
    for relative in (docs.README, docs.REFERENCE, docs.SCHEMA):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    return tmp_path


def test_drift_fails_with_a_diff_and_regenerating_fixes_it(checkout):
    readme = checkout / docs.README
    readme.write_text(readme.read_text().replace("`torch.sqrt($a)`", "`torch.rsqrt($a)`"))
    (checkout / docs.REFERENCE).unlink()
    runner = CliRunner()
    result = runner.invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert result.exit_code == 1
    assert "-| [`pow-half-to-sqrt`]" in result.output and "torch.rsqrt" in result.output
    assert "+| [`pow-half-to-sqrt`]" in result.output
    assert "out of date: README.md" in result.stderr and "out of date: docs/rules.md" in (
        result.stderr)
    schema_mtime = (checkout / docs.SCHEMA).stat().st_mtime_ns
    assert runner.invoke(main, ["rules", "docs", "--root", str(checkout)]).exit_code == 0
    assert readme.read_text() == (ROOT / docs.README).read_text()
    assert (checkout / docs.SCHEMA).stat().st_mtime_ns == schema_mtime  # up to date: untouched
    again = runner.invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert again.exit_code == 0, again.output


def test_text_outside_the_markers_is_kept(checkout):
    readme = checkout / docs.README
    readme.write_text(readme.read_text().replace("<!-- rules:default:end -->",
                                                 "<!-- rules:default:end -->\nMy own line."))
    text = docs.generate(checkout, PACKS)[docs.README]
    assert "<!-- rules:default:end -->\nMy own line." in text


def test_a_readme_without_a_packs_markers_is_a_usage_error(checkout):
    readme = checkout / docs.README
    readme.write_text(readme.read_text().replace("<!-- rules:graphbreaks:begin -->", ""))
    result = CliRunner().invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert result.exit_code == 2
    assert "'<!-- rules:graphbreaks:begin -->'" in result.stderr


def test_every_rule_is_documented_with_its_example():
    page = (ROOT / docs.REFERENCE).read_text()
    for pack in PACKS:
        for rule in pack.rules:
            section = page.split(f"### `{rule.id}`\n", 1)[1].split("\n### ", 1)[0]
            assert " ".join(rule.description.split()) in section
            example = next(e for e in rule.examples if e.after is not None)
            assert example.before.rstrip() in section and example.after.rstrip() in section
            assert ("Unsafe" in section) == (rule.safety == "unsafe")


def test_every_unsafe_rule_states_what_differs():
    unsafe = [rule for pack in PACKS for rule in pack.rules if rule.safety == "unsafe"]
    assert len(unsafe) >= 9
    assert all(rule.safety_note for rule in unsafe), [r.id for r in unsafe if not r.safety_note]


def test_first_sentence_stops_at_a_full_stop_not_an_ellipsis_or_a_number():
    text = "`log.warning(...)` / `info`... on a logger, 1.5 times. Then more."
    assert docs.first_sentence(text) == "`log.warning(...)` / `info`... on a logger, 1.5 times."


# -- the JSON Schema -------------------------------------------------------------------------


def test_the_schema_is_valid_and_packaged():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    packaged = resources.files("eqrewrite.rules") / "schema.json"
    assert json.loads(packaged.read_text(encoding="utf-8")) == SCHEMA


@pytest.mark.parametrize("name", sorted(packaged_packs()))
def test_every_shipped_pack_validates_and_points_editors_at_the_schema(name):
    text = packaged_packs()[name].read_text(encoding="utf-8")
    jsonschema.validate(yaml.safe_load(text), SCHEMA)
    assert text.startswith("# yaml-language-server: $schema=schema.json\n")


def test_the_schema_accepts_exactly_the_loaders_keys():
    assert set(SCHEMA["$defs"]["rule"]["properties"]) == loader._RULE_KEYS
    assert set(SCHEMA["properties"]) == loader._PACK_KEYS


KIND_RULE = """\
rules:
  - id: select-assign
    description: d
    kind: select
    options: {form: assign}
    examples:
      - unchanged: x = 1
"""
BROKEN = {
    "unknown key": GOOD_RULE.replace("    where:", "    wehre:"),
    "bad id": GOOD_RULE.replace("add-to-torch-add", "Add_To"),
    "bad safety": GOOD_RULE.replace("    where:", "    safety: maybe\n    where:"),
    "unknown guard": GOOD_RULE.replace("- tensor: $a", "- tensorish: $a"),
    "guard without $": GOOD_RULE.replace("- tensor: $a", "- tensor: a"),
    "two guards in one entry": GOOD_RULE.replace("- tensor: $a", "- {tensor: $a, name: $a}"),
    "unknown scope": GOOD_RULE.replace("    where:", "    scope: backward\n    where:"),
    "missing description": GOOD_RULE.replace("    description: plus\n", ""),
    "template without rewrite": GOOD_RULE.replace("    rewrite: torch.add($a, $b)\n", ""),
    "template with options": GOOD_RULE.replace("    where:", "    options: {a: b}\n    where:"),
    "before without after": GOOD_RULE.split("        after:")[0],
    "empty rules": "rules: []\n",
    "unknown kind": KIND_RULE.replace("kind: select", "kind: teleport"),
    "kind with pattern": KIND_RULE.replace("    examples:", "    pattern: $a\n    examples:"),
    "kind option value": KIND_RULE.replace("form: assign", "form: loop"),
    "kind without its option": KIND_RULE.replace("    options: {form: assign}\n", ""),
    "kind with unknown option": KIND_RULE.replace("{form: assign}", "{form: assign, x: y}"),
    "boolean as string": GOOD_RULE.replace("    where:", "    assume_tensor_params: 'yes'\n"
                                           "    where:"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_packs_fail_both_the_loader_and_the_schema(name, tmp_path):
    path = write_pack(tmp_path, BROKEN[name])
    with pytest.raises(RuleError):
        load_pack(str(path))
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(
        yaml.safe_load(path.read_text())))
    assert errors, f"the schema accepts a pack the loader rejects ({name})"


@pytest.mark.parametrize("body", [GOOD_RULE, KIND_RULE], ids=["template", "kind"])
def test_good_packs_pass_both(body, tmp_path):
    path = write_pack(tmp_path, body)
    load_pack(str(path))
    jsonschema.validate(yaml.safe_load(path.read_text()), SCHEMA)


def test_the_readme_example_pack_loads_passes_its_examples_and_validates(tmp_path):
    from eqrewrite.rewriter.reporting.examples import check_pack

    text = (ROOT / docs.README).read_text(encoding="utf-8")
    block = text.split("One complete rule:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    pack = load_pack(str(write_pack(tmp_path, block)))
    assert check_pack(pack) == [] and pack.rules[0].safety_note
    jsonschema.validate(yaml.safe_load(block), SCHEMA)
