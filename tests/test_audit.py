"""The static graph-break audit: what it finds, why rules did not fix it, stable ids,
baselines, exit codes, configuration and every format (schemas included). No torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import write_pack
from eqrewrite.rewriter.audit.detect import Detector
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.matching.matcher import Matcher
from eqrewrite.rewriter.matching.rules import Rule, load_pack
from eqrewrite.rewriter.rewriting.engine import parse

ROOT = Path(__file__).resolve().parents[1]
AUDIT_SCHEMA = ROOT / "rewriter" / "audit" / "schema.json"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"

MODEL = '''\
import logging
import warnings

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        print("norm", y.norm())
        logger.warning("scale %s", y.amax())
        warnings.warn("deprecated")
        scale = y.abs().amax().item()
        values = y.tolist()
        picked = y[y > 0]
        index = torch.nonzero(mask)
        kinds = torch.unique(index)
        while y.sum() > 100:
            y = y / 2
        if (y < -100).any():
            raise ValueError("too small")
        return y * scale, values, picked, kinds


def helper(x: torch.Tensor):
    print("not traced", x)
    return x
'''


def _findings(text: str, scope=frozenset({"forward", "compiled"}), assume=False):
    tree = parse(text)
    return Detector(tree, text, scope, assume).run()


def _audit(path: Path, *args: str, cwd: Path | None = None):
    runner = CliRunner()
    with runner.isolated_filesystem() if cwd is None else _chdir(cwd):
        return runner.invoke(main, ["audit", str(path), "-j", "1", *args],
                             catch_exceptions=False)


class _chdir:
    def __init__(self, folder: Path):
        self.folder = folder

    def __enter__(self):
        import os

        self.previous = os.getcwd()
        os.chdir(self.folder)

    def __exit__(self, *exc):
        import os

        os.chdir(self.previous)


def _project(tmp_path: Path, files: dict[str, str], pyproject: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(pyproject or "[project]\nname = 'x'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def _json(tmp_path: Path, *args: str, target: str = ".") -> tuple[dict, int]:
    result = _audit(tmp_path / target, "--format", "json", *args, cwd=tmp_path)
    return json.loads(result.stdout), result.exit_code


# -- detection ----------------------------------------------------------------------------


def test_every_pattern_is_found_in_traced_code_only():
    found = {(s.pattern, s.node.lineno) for s in _findings(MODEL)}
    patterns = {p for p, _ in found}
    assert patterns == {"data-dependent-branch", "print", "logging", "warnings", "item",
                        "tolist", "boolean-mask", "nonzero", "dynamic-shape",
                        "data-dependent-loop", "validation-raise"}
    assert ("print", 36) not in found  # helper() is neither a forward nor compiled
    everywhere = _findings(MODEL, frozenset({"everywhere"}))
    assert ("print", 36) in {(s.pattern, s.node.lineno) for s in everywhere}


def test_static_conditions_and_python_values_are_not_findings():
    text = textwrap.dedent('''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor, n: int):
                if x.shape[0] > 2 and self.training:
                    x = x * 2
                if n > 3 or x is None:
                    x = x + 1
                return x[x.shape[0] - 1], int(x.shape[1])
        ''')
    assert _findings(text) == []


def test_unannotated_operands_are_likely_and_annotated_ones_certain():
    text = textwrap.dedent('''\
        import torch
        from typing import Optional
        class M(torch.nn.Module):
            def forward(self, x, mask: Optional[torch.Tensor] = None, y: torch.Tensor = None):
                a = x.sum().item()
                b = mask.any().item()
                return a + b
        @torch.compile
        def f(t: torch.Tensor):
            return t.max().item()
        ''')
    confidence = {s.node.lineno: s.confidence for s in _findings(text)}
    assert confidence == {5: "likely", 6: "likely", 10: "certain"}
    assumed = {s.node.lineno: s.confidence for s in _findings(text, assume=True)}
    assert assumed[5] == "certain" and assumed[6] == "likely"


# -- why not rewritten --------------------------------------------------------------------


def _why(tmp_path: Path, source: str, *args: str) -> list[dict]:
    _project(tmp_path, {"model.py": source})
    document, _ = _json(tmp_path, *args)
    return document["findings"]


def test_traced_scope_follows_calls_into_other_files(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(textwrap.dedent('''\
        import logging
        import torch
        logger = logging.getLogger(__name__)

        def attention(q: torch.Tensor) -> torch.Tensor:
            logger.warning("attention %s", q.shape)
            return q @ q.transpose(-1, -2)

        def unused(q: torch.Tensor) -> torch.Tensor:
            logger.warning("never called from a forward")
            return q
        '''))
    (package / "model.py").write_text(textwrap.dedent('''\
        import torch
        from .layers import attention

        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return attention(x)
        '''))
    default, _ = _json(tmp_path, target="pkg")
    assert default["findings"] == []  # layers.py defines no forward
    traced, _ = _json(tmp_path, "--scope", "traced", target="pkg")
    (finding,) = traced["findings"]
    assert (finding["file"].endswith("layers.py"), finding["line"]) == (True, 6)
    assert finding["fix"] == "rule" and finding["rule"] == "defer-logger"


def test_a_rule_fixes_a_proven_site_and_its_rewrite_is_reported(tmp_path):
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                print("mean", x.mean())
                return x
        ''')
    assert finding["fix"] == "rule" and finding["rule"] == "defer-print"
    assert finding["rewrite"]["after"].startswith("_eqrw_print(")
    assert finding["why_not"] is None


def test_a_file_the_engine_cannot_rewrite_gets_no_rule_fix(tmp_path, monkeypatch):
    import eqrewrite.rewriter.rewriting.apply as apply

    def refuse(text, edits, tree=None, progress=None, spread=None):
        raise RuntimeError("no Arg at 4:8-4:9")

    monkeypatch.setattr(apply, "apply_edits", refuse)
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                print("mean", x.mean())
                return x
        ''')
    assert finding["fix"] == "setting" and finding["rewrite"] is None  # print has one
    assert finding["why_not"]["stage"] == "apply" and "no Arg at 4:8" in \
        finding["why_not"]["reason"] and finding["why_not"]["rules"] == ["defer-print"]


def test_unannotated_select_is_fixed_by_run_time_dispatch(tmp_path):
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    y = x * 2.0
                else:
                    y = x * 0.5
                return y
        ''')
    # The select kind checks at run time that x is a tensor, so no annotation is needed.
    assert finding["fix"] == "rule" and finding["rule"] == "select-assign"
    assert finding["rewrite"]["after"].startswith("y = _eqrw_select((x,), ")
    assert finding["why_not"] is None


def test_an_unannotated_operand_is_fixed_by_the_rule_with_its_run_time_check(tmp_path):
    # Before the run-time dispatch covered masked reductions, this finding named the operand
    # and `--assume-tensor-params` as the remedy; the rule now rewrites it by default.
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return x[x > 0].sum()
        ''')
    assert finding["confidence"] == "likely" and finding["fix"] == "rule"
    assert finding["rule"] == "masked-reduction" and finding["why_not"] is None


@pytest.mark.parametrize(("body", "reason"), [
    ("if x.sum() > 0:\n    y = self.log(x)\nelse:\n    y = x\n", "side effects"),
    ("if x.sum() > 0:\n    y = x[:2]\nelse:\n    y = x\n", "shapes are likely to differ"),
    ("if x.sum() > 0:\n    a = x\nelse:\n    b = x\n", "different targets (`a` / `b`)"),
    ("if x.sum() > 0:\n    return None\nelse:\n    return x\n", "returns None"),
    ("if x.sum() > 0:\n    y = 'big'\nelse:\n    y = 'small'\n", "not proven to be a tensor"),
    ("if (x > 9).any():\n    self.seen = x\n    raise ValueError(f'bad {x}')\n",
     "a branch has 2 statements"),
    ("print('x', x, file=self.stream)\n", "keyword `file=`"),
    ("n = x.sum().item()\nif n > 3:\n    x = x + 1\n", "flows into a comparison"),
    ("m = x > 0\nz = x[m]\n", "the selection escapes"),
])
def test_each_declined_rewrite_says_why(tmp_path, body, reason):
    indented = textwrap.indent(body, " " * 8)
    source = ("import torch\nclass M(torch.nn.Module):\n    def log(self, t) -> torch.Tensor:\n"
              "        self.seen = t\n        return t\n"
              "    def forward(self, x: torch.Tensor):\n        y = x\n"
              f"{indented}        return y\n")
    findings = _why(tmp_path, source)
    reasons = [f["why_not"]["reason"] for f in findings if f["why_not"]]
    assert any(reason in r for r in reasons), reasons
    assert all(f["why_not"]["remedy"] for f in findings if f["why_not"])


def test_a_template_rule_names_the_failed_guard_and_metavariable(tmp_path):
    pack = write_pack(tmp_path, '''\
        rules:
          - id: item-to-float
            description: keep it simple
            pattern: $t.item()
            rewrite: $t.float()
            where:
              - tensor: $t
            examples:
              - unchanged: "x = 1"
        ''')
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x, n: int):
                return x.sum().item() + n
        ''', "--rules", str(pack))
    why = finding["why_not"]
    assert why["rules"] == ["item-to-float"] and why["stage"] == "guard"
    assert why["reason"].startswith("guard `tensor` failed on `$t` (`x.sum()`, inferred unknown)")


def test_matcher_explain_reports_each_stage_and_kinds_may_explain_themselves():
    text = "import torch\ndef f(x: torch.Tensor):\n    return x.item()  # eqrewrite: ignore\n"
    tree = parse(text)
    call = tree.body[1].body[0].value
    chain = (tree.body[1],)
    item_rule = next(r for r in load_pack("graphbreaks").rules if r.id == "item-to-tensor")
    matcher = Matcher(text, tree, [item_rule])
    assert matcher.explain(item_rule, call, chain).stage == "scope"  # f is not traced

    class Explaining:
        node_types = (type(call),)
        options: dict = {}

        def propose(self, node, context):
            return None

        def decline_reason(self, node, context):
            return "explained by the kind"

    rule = Rule("custom", "", None, "", scope=frozenset({"everywhere"}), kind="custom",
                implementation=Explaining())
    decline = Matcher(text, tree, [rule]).explain(rule, call, chain)
    assert (decline.stage, decline.message) == ("kind", "explained by the kind")
    template = Rule("t", "", load_pack("default").rules[0].pattern, "torch.add($a, $b)",
                    scope=frozenset({"everywhere"}))
    assert Matcher(text, tree, [template]).explain(template, call, chain).stage == "pattern"


def test_no_selected_rule_points_to_the_pack_that_has_one(tmp_path):
    (finding,) = _why(tmp_path, '''\
        import torch
        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                print(x)
                return x
        ''', "--rules", "default")
    assert finding["why_not"]["stage"] == "pack"
    assert "--rules graphbreaks" in finding["why_not"]["remedy"]


# -- ids, baselines, exit codes ------------------------------------------------------------


PRINTS = '''\
import torch
class M(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        print("a", x)
        print("a", x)
        return x
'''


def test_ids_are_stable_across_edits_above_and_reformatting_and_distinct_for_twins(tmp_path):
    _project(tmp_path, {"m.py": PRINTS})
    before, _ = _json(tmp_path)
    ids = [f["id"] for f in before["findings"]]
    assert len(set(ids)) == 2
    shifted = "import os\n\n\n" + PRINTS.replace('print("a", x)', 'print( "a",x )  # hm')
    (tmp_path / "m.py").write_text(shifted)
    after, _ = _json(tmp_path)
    assert [f["id"] for f in after["findings"]] == ids
    assert [f["line"] for f in after["findings"]] == [7, 8]


def test_baseline_reports_only_new_findings_and_sets_the_exit_code(tmp_path):
    _project(tmp_path, {"m.py": PRINTS})
    result = _audit(tmp_path, "--format", "json", "-o", "old.json", cwd=tmp_path)
    assert result.exit_code == 1  # findings
    (tmp_path / "m.py").write_text("# moved\n" + PRINTS)
    known = _audit(tmp_path, "--baseline", "old.json", cwd=tmp_path)
    assert known.exit_code == 0, known.output
    assert "0 new, 2 known, 0 fixed" in known.stdout
    (tmp_path / "m.py").write_text(PRINTS.replace("        return x",
                                                  "        print(x.sum())\n        return x"))
    new, status = _json(tmp_path, "--baseline", "old.json")
    assert status == 1
    assert [f["code"] for f in new["findings"]] == ["print(x.sum())"]
    assert new["baseline"] == {"path": "old.json", "known": 2, "fixed": 0, "new": 1}
    (tmp_path / "bad.json").write_text("{}")
    bad = _audit(tmp_path, "--baseline", "bad.json", cwd=tmp_path)
    assert bad.exit_code == 2 and "not an eqrewrite audit JSON report" in bad.output


def test_exit_codes(tmp_path):
    _project(tmp_path, {"m.py": PRINTS, "clean.py": "x = 1\n"})
    assert _audit(tmp_path / "clean.py", cwd=tmp_path).exit_code == 0
    assert _audit(tmp_path, cwd=tmp_path).exit_code == 1
    assert _audit(tmp_path, "--exit-zero", cwd=tmp_path).exit_code == 0
    unknown = _audit(tmp_path, "--ignore", "prnt", cwd=tmp_path)
    assert unknown.exit_code == 2 and "did you mean print" in unknown.output
    (tmp_path / "broken.py").write_text("def forward(:\n")
    broken = _audit(tmp_path, "--exit-zero", cwd=tmp_path)
    assert broken.exit_code == 123 and "broken.py:1: syntax error" in broken.stdout


def test_pyproject_audit_table_and_its_errors(tmp_path):
    source = PRINTS.replace('print("a", x)\n        print("a", x)',
                            'print("a", x)\n        y = x.sum().item()')
    _project(tmp_path, {"m.py": source, "old.json": ""},
             '[tool.eqrewrite.audit]\nignore = ["item"]\nscope = ["forward"]\n')
    document, _ = _json(tmp_path)
    assert [f["pattern"] for f in document["findings"]] == ["print"]
    assert document["settings"]["ignore"] == ["item"]
    (tmp_path / "pyproject.toml").write_text('[tool.eqrewrite.audit]\nignor = ["item"]\n')
    result = _audit(tmp_path, cwd=tmp_path)
    assert result.exit_code == 2
    assert "[tool.eqrewrite.audit]: unknown key 'ignor' (did you mean ignore?)" in result.output
    (tmp_path / "pyproject.toml").write_text('[tool.eqrewrite.audit]\nbaseline = "old.json"\n')
    result = _audit(tmp_path, cwd=tmp_path)
    assert result.exit_code == 2 and "old.json: not JSON" in result.output


def test_ignore_comments_suppress_a_pattern_on_their_line(tmp_path):
    source = PRINTS.replace('print("a", x)\n', 'print("a", x)  # eqrewrite: ignore[print]\n', 1)
    _project(tmp_path, {"m.py": source})
    document, _ = _json(tmp_path)
    assert len(document["findings"]) == 1 and document["summary"]["suppressed"] == 1


# -- formats ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("audit-model")
    return _project(folder, {"pkg/model.py": MODEL, "pkg/__init__.py": ""})


def test_json_validates_against_the_shipped_schema(model_project):
    document, status = _json(model_project)
    jsonschema.Draft202012Validator(json.loads(AUDIT_SCHEMA.read_text())).validate(document)
    assert status == 1 and document["summary"]["findings"] == 11
    summary = document["summary"]
    assert sum(summary["by_fix"].values()) == summary["findings"]
    assert summary["causes"][0]["count"] >= summary["causes"][-1]["count"]


def test_sarif_validates_against_the_official_schema(model_project):
    result = _audit(model_project, "--format", "sarif", cwd=model_project)
    sarif = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert all(r["help"]["markdown"] and r["shortDescription"]["text"] for r in rules.values())
    results = run["results"]
    assert {r["ruleId"] for r in results} == set(rules)
    assert all(r["partialFingerprints"]["eqrewriteFindingId/v1"] for r in results)
    assert all(rules[r["ruleId"]] is run["tool"]["driver"]["rules"][r["ruleIndex"]]
               for r in results)
    printed = next(r for r in results if r["ruleId"] == "print")
    location = printed["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/model.py"
    assert location["region"]["startLine"] == 20
    change = printed["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert change["insertedContent"]["text"].startswith("_eqrw_print(")
    assert not next(r for r in results if r["ruleId"] == "data-dependent-loop").get("fixes")


def test_text_and_markdown_put_the_summary_first(model_project):
    text = _audit(model_project, cwd=model_project).stdout
    assert text.startswith("eqrewrite audit: 11 findings in 1 of 2 files")
    assert text.index("Top causes") < text.index("pkg/model.py")
    markdown = _audit(model_project, "--format", "md", cwd=model_project).stdout
    assert markdown.startswith("## eqrewrite graph-break audit\n\n**11 findings**")
    assert "| cause | count | by rule | by setting | manual |" in markdown
    assert "<details><summary><code>pkg/model.py</code>: 11</summary>" in markdown


def test_output_file_and_html_is_self_contained(model_project, tmp_path):
    result = _audit(model_project, "--format", "html", "-o", str(tmp_path / "r.html"),
                    cwd=model_project)
    assert "report written to" in result.output
    page = (tmp_path / "r.html").read_text()
    assert "<script src" not in page and "<link" not in page and "http://" not in page.replace(
        "http://www.w3.org/2000/svg", "")
    assert '"file": "pkg/model.py"' in page


def test_the_static_audit_never_imports_torch(model_project):
    code = ("import sys\nfrom eqrewrite.rewriter.cli import main\n"
            f"try:\n    main(['audit', {str(model_project)!r}, '-q', '--format', 'json'])\n"
            "except SystemExit:\n    pass\nassert 'torch' not in sys.modules, 'torch imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_several_outputs_take_their_format_from_the_suffix(model_project, tmp_path):
    result = _audit(model_project, "-o", str(tmp_path / "a.json"), "-o",
                    str(tmp_path / "a.sarif"), "-o", str(tmp_path / "a.md"), cwd=model_project)
    assert result.exit_code == 1
    assert json.loads((tmp_path / "a.json").read_text())["kind"] == "eqrewrite-audit"
    assert json.loads((tmp_path / "a.sarif").read_text())["version"] == "2.1.0"
    assert (tmp_path / "a.md").read_text().startswith("## eqrewrite graph-break audit")
    unknown = _audit(model_project, "-o", str(tmp_path / "a.pdf"), cwd=model_project)
    assert unknown.exit_code == 2 and "cannot tell the format from the suffix" in unknown.output


def test_fix_text_is_what_the_rewrite_command_writes(tmp_path):
    """Every rule fix the audit shows is the text `eqrewrite --rules graphbreaks` writes at
    that site: the line(s) of the site with start..end replaced by `after` appear as they
    are in the rewritten file."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "graphbreak_corpus", project / "corpus")
    shutil.copytree(ROOT / "examples", project / "examples",
                    ignore=shutil.ignore_patterns("audit", "*.md"))
    (project / "pyproject.toml").write_text("[project]\nname = 'fixes'\n")
    report = tmp_path / "audit.json"
    audited = _audit(project, "--scope", "everywhere", "-o", str(report), cwd=project)
    assert audited.exit_code == 1, audited.output
    out = tmp_path / "out"
    rewritten = CliRunner().invoke(main, [str(project), "--rules", "graphbreaks", "--scope",
                                          "everywhere", "--out", str(out), "--no-cache", "-j",
                                          "1"], catch_exceptions=False)
    assert rewritten.exit_code == 0, rewritten.output
    fixed = [f for f in json.loads(report.read_text())["findings"] if f["fix"] == "rule"]
    for finding in fixed:
        rewrite = finding["rewrite"]
        lines = (project / finding["file"]).read_text().splitlines(keepends=True)
        first, last = lines[rewrite["start"]["line"] - 1], lines[rewrite["end"]["line"] - 1]
        assert "".join(lines[rewrite["start"]["line"] - 1: rewrite["end"]["line"]]) == (
            first[: rewrite["start"]["column"] - 1] + rewrite["before"]
            + last[rewrite["end"]["column"] - 1:])
        expected = (first[: rewrite["start"]["column"] - 1] + rewrite["after"]
                    + last[rewrite["end"]["column"] - 1:])
        assert expected in (out / finding["file"]).read_text(), finding["id"]
    assert len(fixed) >= 30 and len({f["rule"] for f in fixed}) >= 8


TRUST = '''\
import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x: torch.Tensor, scale: float):
        if x.sum() > scale:
            y = x * 2
        else:
            y = x - 1
        return y
'''


@pytest.mark.parametrize(("options", "config", "trusted"), [
    ([], "", True),
    (["--no-trust-scalar-annotations"], "", False),
    ([], "trust-scalar-annotations = false\n", False),
    (["--trust-scalar-annotations"], "trust-scalar-annotations = false\n", True),
])
def test_the_audit_trusts_scalar_annotations_as_rewriting_does(tmp_path, options, config,
                                                                trusted):
    """``scale: float`` proves the condition a tensor comparison only when annotations are
    trusted; the audit follows the same switch and configuration as rewriting (it used to
    trust them always, promising a rule fix the rewrite would not make)."""
    (tmp_path / "pyproject.toml").write_text("[tool.eqrewrite]\n" + config)
    (tmp_path / "m.py").write_text(TRUST)
    result = _audit(tmp_path / "m.py", "--format", "json", *options, cwd=tmp_path)
    document = json.loads(result.stdout)
    (finding,) = document["findings"]
    assert finding["fix"] == ("rule" if trusted else "manual")
    assert document["settings"]["trust_scalar_annotations"] is trusted
    rewritten = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "m.py", "--diff",
                                "--rules", "graphbreaks",
                                *options], capture_output=True, text=True, cwd=tmp_path)
    assert ("torch.where" in rewritten.stdout) is trusted  # what the audit promised
