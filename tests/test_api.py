"""The public API (docs/api.md): the page's examples run as they are written, each function
returns the typed report its command prints (the command line being a thin layer over it),
and a bad argument is a typed exception, never an exit."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from eqrewrite.rewriter import api
from eqrewrite.rewriter.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"

TENSOR_CODE = "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x + y\n"
REWRITTEN = TENSOR_CODE.replace("x + y", "torch.add(x, y)")
CLEAN_CODE = "def f(a, b):\n    return a + b\n"
BREAKING_CODE = '''\
import torch


class M(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        print("mean", x.mean())
        return x
'''


def _blocks() -> list[tuple[int, str]]:
    """The page's ```python blocks, with the line each starts on."""
    text = PAGE.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(TENSOR_CODE)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN_CODE)
    (tmp_path / "pkg" / "net.py").write_text(BREAKING_CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_examples_run(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    monkeypatch.chdir(tmp_path)
    sources = {p: p.read_bytes() for p in (tmp_path / "examples").rglob("*.py")}
    blocks = _blocks()
    assert len(blocks) == 5
    namespace: dict[str, object] = {}
    for line, block in blocks:
        # Compiled at the page's line numbers, so a failure points into docs/api.md.
        exec(compile("\n" * (line - 1) + block, str(PAGE), "exec"), namespace)
    printed = capsys.readouterr().out

    report = namespace["report"]
    assert isinstance(report, api.RewriteReport) and report.mode is api.Mode.CHECK
    assert len(report.edits) > 0 and report.changed and not report.errors
    assert report.summary()["edits"] == len(report.edits)
    # The same run from one RewriteSettings value: the same document, the value kept.
    again = namespace["again"]
    assert isinstance(again, api.RewriteReport) and again.settings == namespace["settings"]
    assert json.loads(again.to_json()) == json.loads(report.to_json())
    assert again.status == 1 and "check 1\n" in printed
    path, edit = report.edits[0]
    assert f"{path}:{edit.start_line}: {edit.rule}: " in printed
    # Check mode wrote nothing, and out= wrote only the rewritten tree.
    assert {p: p.read_bytes() for p in sources} == sources
    assert (tmp_path / "rewritten" / "layernorm.py").is_file()

    audit = namespace["audit"]
    assert isinstance(audit, api.AuditReport)
    assert audit.findings and audit.summary["findings"] == len(audit.findings)
    assert {f["fix"] for f in audit.findings} >= {"rule", "manual"}
    assert "<html" in str(namespace["html"]).lower()
    assert "no-such-pack: no such file" in printed

    result = namespace["result"]
    (target,) = result.targets
    assert target.target == "layernorm.py::LayerNorm" and target.verdict == "passed"
    assert result.status == 0 and not result.failed and not result.unvalidated, result.table()
    assert result.rewritten == Path("rewritten") and "layernorm.py::LayerNorm" in printed


# -- rewrite ---------------------------------------------------------------------------------

def test_rewrite_in_check_mode_returns_the_results_and_writes_nothing(project):
    report = api.rewrite("pkg", mode="check", cache=False)
    assert report.mode is api.Mode.CHECK and report.out is None
    assert report.root == project and report.paths == (Path("pkg"),)
    by_name = {Path(r.path).name: r for r in report.results}
    assert by_name["model.py"].status is api.Status.CHANGED
    assert by_name["clean.py"].status is api.Status.UNCHANGED
    (path, edit), = [(p, e) for p, e in report.edits if p.endswith("model.py")]
    assert isinstance(edit, api.EditRecord)
    assert (edit.rule, edit.start_line, edit.before, edit.after) == (
        "add-to-torch-add", 5, "x + y", "torch.add(x, y)")
    assert [r.path for r in report.changed] == [path]
    assert {rule.id for rule in report.rules} <= {r.id for p in report.packs for r in p.rules}
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_rewrite_writes_in_place_or_to_out(project):
    out = api.rewrite(["pkg"], out=project / "out", cache=False)
    assert out.mode is api.Mode.OUT and (project / "out" / "model.py").read_text() == REWRITTEN
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE
    written = api.rewrite(project / "pkg" / "model.py", cache=False)
    assert written.mode is api.Mode.WRITE and written.results[0].written
    assert (project / "pkg" / "model.py").read_text() == REWRITTEN


def test_rewrite_in_diff_mode_holds_the_diffs(project):
    report = api.rewrite("pkg", mode="diff", cache=False)
    (changed,) = report.changed
    assert "-    return x + y\n+    return torch.add(x, y)\n" in changed.diff


def test_the_command_prints_the_apis_report(project):
    """The command line is a thin layer: its JSON and SARIF documents are the report's."""
    report = api.rewrite("pkg", mode="check", cache=False)
    for output_format, document in (("json", report.to_json()), ("sarif", report.to_sarif())):
        result = CliRunner().invoke(main, ["pkg", "--check", "--no-cache", "--format",
                                           output_format], catch_exceptions=False)
        assert result.exit_code == 1
        assert json.loads(result.stdout) == json.loads(document)


def test_a_file_that_cannot_be_processed_is_a_result_not_an_exception(project):
    (project / "pkg" / "broken.py").write_text("def f(:\n")
    report = api.rewrite("pkg", mode="check", cache=False)
    (error,) = report.errors
    assert error.status is api.Status.ERROR and error.path.endswith("broken.py") and error.line
    assert len(report.changed) == 1  # the other files still are


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"rules": ["no-such-pack"]}, api.RuleError, "no-such-pack: no such file"),
    ({"scope": ["nowhere"]}, api.OptionError, "unknown scope 'nowhere'"),
    ({"ignore": ["add-to-torch-ad"]}, api.OptionError, "did you mean add-to-torch-add"),
    ({"mode": "check", "out": "out"}, api.OptionError, "cannot be combined"),
    ({"mode": "fix"}, api.OptionError, "unknown mode 'fix'"),
])
def test_bad_arguments_raise_typed_errors(project, arguments, error, message):
    with pytest.raises(error, match=re.escape(message)) as raised:
        api.rewrite("pkg", cache=False, **{"mode": "check", **arguments})
    assert isinstance(raised.value, api.USAGE_ERRORS)
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_missing_paths_and_bad_configuration_raise(project):
    with pytest.raises(api.OptionError, match="no such file or folder"):
        api.rewrite("nowhere", mode="check")
    with pytest.raises(api.OptionError, match="no paths given"):
        api.audit([])
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nrulez = ['default']\n")
    with pytest.raises(api.ConfigError, match="unknown key 'rulez'"):
        api.rewrite("pkg", mode="check")
    # config= replaces the project's table.
    assert api.rewrite("pkg", mode="check", cache=False, config=api.Config()).changed


# -- audit -----------------------------------------------------------------------------------

def test_audit_returns_the_commands_document(project):
    report = api.audit("pkg", cache=False)
    (finding,) = report.findings
    assert (finding["file"], finding["pattern"], finding["fix"], finding["rule"]) == (
        "pkg/net.py", "print", "rule", "defer-print")
    assert report.summary["findings"] == 1 and report.errors == []
    assert [f.name for f in report.files] == ["clean.py", "model.py", "net.py"]
    result = CliRunner().invoke(main, ["audit", "pkg", "--no-cache", "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 1
    printed, returned = json.loads(result.stdout), json.loads(report.render("json"))
    for document in (printed, returned):
        del document["summary"]["seconds"]  # the only difference: the time taken
    assert printed == returned
    assert "defer-print" in report.render("md")


def test_audit_against_a_baseline(project):
    baseline = project / "audit.json"
    baseline.write_text(api.audit("pkg", cache=False).render("json"))
    report = api.audit("pkg", cache=False, baseline=baseline)
    assert report.findings == [] and report.document["baseline"]["known"] == 1
    baseline.write_text("{}")
    with pytest.raises(api.BaselineError, match="not an eqrewrite audit JSON report"):
        api.audit("pkg", cache=False, baseline=baseline)
    with pytest.raises(api.OptionError, match="--ignore"):
        api.audit("pkg", cache=False, ignore=["no-such-pattern"])


# -- oracle ----------------------------------------------------------------------------------

def test_importing_the_apis_imports_no_torch():
    code = ("import sys, eqrewrite.rewriter.api, eqrewrite.oracle.api; "
            "print('torch' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout
    assert shown.strip() == "False"


def test_the_oracle_raises_a_usage_error_before_any_worker_starts(tmp_path):
    from eqrewrite.oracle.api import OracleError, oracle

    shutil.copy(ROOT / "examples" / "layernorm.py", tmp_path / "layernorm.py")
    with pytest.raises(OracleError, match="unknown backend 'no-such-backend'"):
        oracle(tmp_path / "layernorm.py", settings={"backend": "no-such-backend"})
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(OracleError, match="declares no target"):
        oracle(tmp_path / "empty.py")
