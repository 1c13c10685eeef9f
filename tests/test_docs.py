"""Docs generated from the packs (the pack pages' tables, docs/rules.md, the pack JSON
Schema), and the documentation site's structure (mkdocs.yml's nav, the README).

The drift check (``eqrewrite rules docs --check``) runs here, so CI fails when a pack
changes without its documentation; the schema is checked against the loader on shipped
packs and on broken ones. CI builds the site with ``mkdocs build --strict`` (.ci/run), which
checks the links between pages; these tests check what it does not: the README's length
and links, and that the nav and docs/ list the same pages.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
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
from eqrewrite.rewriter.rulebook import docs

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
    """A copy of the generated files and the pack pages, as a checkout to run the command on."""
    for relative in (*docs.TABLES.values(), docs.REFERENCE, docs.SCHEMA):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    return tmp_path


def test_drift_fails_with_a_diff_and_regenerating_fixes_it(checkout):
    page = checkout / docs.TABLES["default"]
    page.write_text(page.read_text().replace("`torch.sqrt($a)`", "`torch.rsqrt($a)`"))
    (checkout / docs.REFERENCE).unlink()
    runner = CliRunner()
    result = runner.invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert result.exit_code == 1
    assert "-| [`pow-half-to-sqrt`]" in result.output and "torch.rsqrt" in result.output
    assert "+| [`pow-half-to-sqrt`]" in result.output
    assert "out of date: docs/default-pack.md" in result.stderr
    assert "out of date: docs/rules.md" in result.stderr
    schema_mtime = (checkout / docs.SCHEMA).stat().st_mtime_ns
    assert runner.invoke(main, ["rules", "docs", "--root", str(checkout)]).exit_code == 0
    assert page.read_text() == (ROOT / docs.TABLES["default"]).read_text()
    assert (checkout / docs.SCHEMA).stat().st_mtime_ns == schema_mtime  # up to date: untouched
    again = runner.invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert again.exit_code == 0, again.output


def test_text_outside_the_markers_is_kept(checkout):
    page = checkout / docs.TABLES["default"]
    page.write_text(page.read_text().replace("<!-- rules:default:end -->",
                                             "<!-- rules:default:end -->\nMy own line."))
    text = docs.generate(checkout, PACKS)[docs.TABLES["default"]]
    assert "<!-- rules:default:end -->\nMy own line." in text


def test_a_page_without_a_packs_markers_is_a_usage_error(checkout):
    page = checkout / docs.TABLES["graphbreaks"]
    page.write_text(page.read_text().replace("<!-- rules:graphbreaks:begin -->", ""))
    result = CliRunner().invoke(main, ["rules", "docs", "--check", "--root", str(checkout)])
    assert result.exit_code == 2
    assert "graph-break-pack.md" in result.stderr
    assert "'<!-- rules:graphbreaks:begin -->'" in result.stderr


def test_a_pack_without_a_page_is_an_error(checkout, tmp_path):
    pack = load_pack(str(write_pack(tmp_path, GOOD_RULE, name="extra.yaml")))
    with pytest.raises(docs.DocsError, match="pack 'extra' has no documentation page"):
        docs.generate(checkout, [*PACKS, pack])


def test_tables_link_to_the_reference_from_their_page():
    for name, page in docs.TABLES.items():
        text = (ROOT / page).read_text()
        assert page.parent == docs.REFERENCE.parent
        assert f"| [`{load_pack(name).rules[0].id}`](rules.md#" in text


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


def test_the_documented_example_pack_loads_passes_its_examples_and_validates(tmp_path):
    from eqrewrite.rewriter.rulebook.examples import check_pack

    text = (ROOT / "docs/writing-rules.md").read_text(encoding="utf-8")
    block = text.split("One complete rule:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    pack = load_pack(str(write_pack(tmp_path, block)))
    assert check_pack(pack) == [] and pack.rules[0].safety_note
    jsonschema.validate(yaml.safe_load(block), SCHEMA)


# -- the documentation site (mkdocs.yml, docs/, README.md) ----------------------------------

README = ROOT / "README.md"
README_MAX_LINES = 400  # a README that fits on a screen or two; the rest is in docs/


def nav_pages(nav: object) -> list[str]:
    """Every page of a mkdocs ``nav``: ``page.md``, ``{title: page.md}``, ``{title: [...]}``."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    raise TypeError(f"unexpected nav entry: {nav!r}")


def nav_problems(docs_dir: Path, nav: object) -> list[str]:
    """Pages the nav lists that do not exist, pages of ``docs_dir`` it leaves out, and pages
    it lists twice."""
    listed = nav_pages(nav)
    on_disk = {path.relative_to(docs_dir).as_posix() for path in docs_dir.rglob("*.md")}
    problems = [f"in the nav but not in docs/: {page}" for page in listed if page not in on_disk]
    problems += [f"in docs/ but not in the nav: {page}" for page in sorted(on_disk - set(listed))]
    problems += [f"listed twice: {page}" for page in sorted({p for p in listed
                                                            if listed.count(p) > 1})]
    return problems


def slug(heading: str) -> str:
    """A heading's anchor as mkdocs makes it (Python-Markdown's toc ``slugify``)."""
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore")
    text = re.sub(r"[^\w\s-]", "", text.decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: str) -> set[str]:
    """The anchors of a Markdown page's headings (outside code blocks)."""
    found, fence = set(), False
    for line in page.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            found.add(slug(line.lstrip("#")))
    return found


def link_problems(root: Path, text: str) -> list[str]:
    """Relative links of a Markdown file at ``root`` whose file, or heading anchor in a
    Markdown file, does not exist."""
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path, _, anchor = target.partition("#")
        if not (root / path).exists():
            problems.append(f"{target}: no such file")
        elif anchor and anchor not in anchors((root / path).read_text(encoding="utf-8")):
            problems.append(f"{target}: no such heading")
    return problems


def test_the_readme_fits_on_a_screen_or_two():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move sections to docs/"


def test_the_nav_lists_every_page_of_docs_and_nothing_else():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["docs_dir"] == "docs" and docs.REFERENCE.as_posix() == "docs/rules.md"
    assert nav_problems(ROOT / "docs", config["nav"]) == []
    assert "rules.md" in nav_pages(config["nav"])  # the generated reference is a page


def test_the_readmes_links_resolve_and_point_into_the_docs():
    text = README.read_text(encoding="utf-8")
    assert link_problems(ROOT, text) == []
    linked = {target.partition("#")[0] for target in re.findall(r"\]\((docs/[^)\s]+)\)", text)}
    assert {"docs/index.md", "docs/usage.md", "docs/benchmarks/index.md"} <= linked


def test_ci_runs_the_readmes_test_command():
    """.ci/run copies the README's second set-up command verbatim."""
    command = "pip install torch==2.13.0 && pip install -e '.[test]' && python -m pytest -q"
    setup = README.read_text(encoding="utf-8").split("## Set-up\n", 1)[1].split("\n## ", 1)[0]
    assert command in setup
    assert command + "\n" in (ROOT / ".ci/run").read_text(encoding="utf-8")


def test_the_nav_check_reports_missing_unlisted_and_repeated_pages(tmp_path):
    for page in ("index.md", "a.md", "sub/b.md"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text("# x\n")
    nav = ["index.md", {"Part": ["a.md", {"Gone": "c.md"}]}, {"Again": "a.md"}]
    assert nav_problems(tmp_path, nav) == ["in the nav but not in docs/: c.md",
                                           "in docs/ but not in the nav: sub/b.md",
                                           "listed twice: a.md"]


def test_the_link_check_reports_missing_files_and_headings(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/usage.md").write_text("# Usage\n\n## The cache (`--no-cache`)\n\n"
                                            "```sh\n# Not a heading\n```\n")
    text = ("[a](docs/usage.md) [b](docs/usage.md#the-cache-no-cache) [c](docs/gone.md) "
            "[d](docs/usage.md#not-a-heading) [e](https://example.com/x.md) [f](#local)")
    assert link_problems(tmp_path, text) == ["docs/gone.md: no such file",
                                             "docs/usage.md#not-a-heading: no such heading"]
