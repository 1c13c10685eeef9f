"""``--oracle-tests``: a tiny project's own pytest suite judges a rewrite (no torch needed)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from eqrewrite.oracle.harness.testsuite import (
    SuiteError,
    _matches,
    changed_lines,
    parse_command,
    read_junit,
)
from eqrewrite.rewriter.cli import main

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests/"

ARITH = "def double(x):\n    return x * 2\n\n\ndef add(a, b):\n    return a + b\n"
OTHER = "def square(x):\n    return x * x\n\n\ndef shift(a, b):\n    return a + b\n"
TEST_ARITH = """from calc.arith import add, double


def test_double():
    assert double(3) == 6


def test_add():
    assert add(2, 3) == 5
"""
TEST_OTHER = """from calc.other import square


class TestSquare:
    def test_square(self):
        assert square(3) == 9
"""
# Passes on its first run only (the original tree's first run): flaky, whatever the rewrite.
TEST_FLAKY = """from pathlib import Path

from calc.arith import add

COUNTER = Path({counter!r})


def test_flaky():
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    assert add(1, 1) == 2 and runs == 0
"""
CORRECT = """description: test pack
rules:
  - id: double-to-add
    description: "x * 2 is x + x on ints"
    pattern: $a * 2
    rewrite: $a + $a
"""
# Planted: wrong everywhere, but only src/calc/arith.py's add is tested.
WRONG = """description: test pack
rules:
  - id: add-to-sub
    description: "a planted wrong rule"
    pattern: $a + $b
    rewrite: $a - $b
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'calc'\n")
    (root / "src" / "calc" / "__init__.py").write_text("")
    (root / "src" / "calc" / "arith.py").write_text(ARITH)
    (root / "src" / "calc" / "other.py").write_text(OTHER)
    (root / "tests" / "test_arith.py").write_text(TEST_ARITH)
    (root / "tests" / "test_other.py").write_text(TEST_OTHER)
    (tmp_path / "correct.yaml").write_text(CORRECT)
    (tmp_path / "wrong.yaml").write_text(WRONG)
    return root


def run_cli(project: Path, *args: str):
    result = CliRunner().invoke(main, [str(project / "src"), *args, "--no-cache"],
                                catch_exceptions=False)
    return result


def record(result) -> dict:
    return json.loads(result.stdout)["steps"]["oracle_tests"]


def test_correct_rule_keeps_every_outcome(project):
    result = run_cli(project, "--rules", str(project.parent / "correct.yaml"),
                     "--oracle-tests", PYTEST, "--format", "json")
    assert result.exit_code == 0, result.output
    found = record(result)
    assert found["tests_run"] == 3
    assert found["outcomes_changed"] == [] and found["flaky"] == []
    assert found["files_cleared"] == ["src/calc/arith.py"]
    assert found["files_rolled_back"] == []
    assert found["written"] == ["src/calc/arith.py"]
    assert "(x + x)" in (project / "src" / "calc" / "arith.py").read_text()


def test_wrong_rule_is_caught_and_nothing_is_written(project):
    result = run_cli(project, "--rules", str(project.parent / "wrong.yaml"),
                     "--oracle-tests", PYTEST)
    assert result.exit_code == 1, result.output
    assert "CHANGED tests.test_arith::test_add: passed -> failed: assert -1 == 5" \
        in result.stderr
    assert "executed: src/calc/arith.py" in result.stderr
    assert "nothing written in place" in result.stderr
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH
    assert (project / "src" / "calc" / "other.py").read_text() == OTHER


def test_wrong_rule_is_rolled_back(project):
    result = run_cli(project, "--rules", str(project.parent / "wrong.yaml"),
                     "--oracle-tests", PYTEST, "--rollback", "--format", "json")
    assert result.exit_code == 0, result.output
    found = record(result)
    [changed] = found["outcomes_changed"]
    assert changed["test"] == "tests.test_arith::test_add"
    assert changed["before"]["status"] == "passed"
    assert changed["after"] == {"status": "failed", "message": "assert -1 == 5"}
    assert changed["files"] == ["src/calc/arith.py"]
    assert changed["after_rollback"]["status"] == "passed"
    assert found["files_rolled_back"] == ["src/calc/arith.py"]
    # other.py's rewritten line runs in no test: neither blamed nor cleared.
    assert found["files_unexercised"] == ["src/calc/other.py"]
    assert found["unresolved"] == 0 and found["written"] == ["src/calc/other.py"]
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH
    assert "(a - b)" in (project / "src" / "calc" / "other.py").read_text()


def test_check_writes_nothing(project):
    result = run_cli(project, "--rules", str(project.parent / "wrong.yaml"),
                     "--oracle-tests", PYTEST, "--rollback", "--check", "--format", "json")
    assert result.exit_code == 1, result.output
    found = record(result)
    assert found["files_rolled_back"] == ["src/calc/arith.py"] and found["written"] == []
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH
    assert (project / "src" / "calc" / "other.py").read_text() == OTHER


def test_out_tree_gets_the_rolled_back_original(project, tmp_path):
    out = tmp_path / "out"
    result = run_cli(project, "--rules", str(project.parent / "wrong.yaml"),
                     "--oracle-tests", PYTEST, "--rollback", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "calc" / "arith.py").read_text() == ARITH
    assert "(a - b)" in (out / "calc" / "other.py").read_text()
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH


def test_flaky_test_is_reported_not_blamed(project, tmp_path):
    counter = tmp_path / "counter.txt"
    (project / "tests" / "test_flaky.py").write_text(TEST_FLAKY.format(counter=str(counter)))
    result = run_cli(project, "--rules", str(project.parent / "correct.yaml"),
                     "--oracle-tests", PYTEST, "--format", "json")
    assert result.exit_code == 0, result.output
    found = record(result)
    [flaky] = found["flaky"]
    assert flaky["test"] == "tests.test_flaky::test_flaky"
    assert (flaky["first"]["status"], flaky["second"]["status"]) == ("passed", "failed")
    assert found["outcomes_changed"] == []  # the rewritten run failed too: not blamed
    assert int(counter.read_text()) == 3
    assert "FLAKY" not in result.stdout  # the text report goes to stderr


IMPORT_BREAKER = """description: test pack
rules:
  - id: len-to-method
    description: "a planted wrong rule that breaks a module at import"
    pattern: len($a)
    rewrite: $a.length()
"""


def test_module_broken_at_import_is_blamed_and_rolled_back(project, tmp_path):
    (project / "src" / "calc" / "consts.py").write_text("SIZE = len('abc')\n")
    (project / "tests" / "test_consts.py").write_text(
        "from calc.consts import SIZE\n\n\ndef test_size():\n    assert SIZE == 3\n")
    (tmp_path / "breaker.yaml").write_text(IMPORT_BREAKER)
    result = run_cli(project, "--rules", str(tmp_path / "breaker.yaml"),
                     "--oracle-tests", PYTEST, "--rollback", "--format", "json")
    assert result.exit_code == 0, result.output
    found = record(result)
    by_test = {c["test"]: c for c in found["outcomes_changed"]}
    # The module no longer imports: its test is gone, a collection error appears.
    assert by_test["tests.test_consts::test_size"]["after"]["status"] == "missing"
    error = by_test["::tests.test_consts"]["after"]
    assert error["status"] == "error" and "has no attribute 'length'" in error["message"]
    assert {tuple(c["files"]) for c in by_test.values()} == {("src/calc/consts.py",)}
    assert found["files_rolled_back"] == ["src/calc/consts.py"]
    assert found["unresolved"] == 0
    assert (project / "src" / "calc" / "consts.py").read_text() == "SIZE = len('abc')\n"


def test_non_pytest_command_is_refused(project):
    result = run_cli(project, "--rules", str(project.parent / "correct.yaml"),
                     "--oracle-tests", "make test")
    assert result.exit_code == 2
    assert "--oracle-tests needs a pytest invocation" in result.stderr
    assert "'make test'" in result.stderr
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH


def test_a_command_that_cannot_run_writes_nothing(project):
    result = run_cli(project, "--rules", str(project.parent / "correct.yaml"),
                     "--oracle-tests", PYTEST + " --no-such-option")
    assert result.exit_code == 2
    assert "the test command exited 4 on the original tree" in result.stderr
    assert (project / "src" / "calc" / "arith.py").read_text() == ARITH


def test_parse_command():
    assert parse_command("python -m pytest -q tests/").args == ("-q", "tests/")
    assert parse_command("pytest -x").args == ("-x",)
    for bad in ("", "tox -e py", "python -m unittest", "python script.py"):
        with pytest.raises(SuiteError, match="pytest"):
            parse_command(bad)


def test_read_junit_and_context_matching(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_ok"/>'
        '<testcase classname="tests.test_a.TestC" name="test_p[1]">'
        '<failure message="assert 1 == 2&#10;more">trace</failure></testcase>'
        '<testcase classname="tests.test_a" name="test_s"><skipped message="no gpu"/></testcase>'
        '</testsuite></testsuites>')
    outcomes = read_junit(junit)
    assert outcomes["tests.test_a::test_ok"].status == "passed"
    assert str(outcomes["tests.test_a.TestC::test_p[1]"]) == "failed: assert 1 == 2"
    assert str(outcomes["tests.test_a::test_s"]) == "skipped: no gpu"
    assert _matches("test_a.TestC.test_p", "tests.test_a.TestC::test_p[1]")
    assert _matches("tests.test_a.test_ok", "tests.test_a::test_ok")
    assert not _matches("test_b.test_ok", "tests.test_a::test_ok")
    assert not _matches("test_a.test_other", "tests.test_a::test_ok")
    assert changed_lines(b"a\nb\nc\n", b"a\nB\nc\nd\n") == {2, 4}


def test_check_mode_tests_the_rewrite_the_run_made_across_files(tmp_path):
    """With --check the tested copy is rewritten file by file: each file under the options
    the run gave it, so a function traced only through a call in another file (the `traced`
    scope, decided over the whole run) is rewritten there too (kornia's geometry/boxes.py)."""
    from eqrewrite.oracle.plugin import _rewritten_files
    from eqrewrite.rewriter import api
    from eqrewrite.rewriter.plugins import RewriteRun

    package = tmp_path / "pkg"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(
        "import torch\n\n\ndef clip(x: torch.Tensor):\n"
        "    if x.sum() > 0:\n        y = x * 0.5\n    else:\n        y = x * 1.0\n"
        "    return y\n")
    (package / "model.py").write_text(
        "import torch\nfrom pkg.helpers import clip\n\n\nclass M(torch.nn.Module):\n"
        "    def forward(self, x: torch.Tensor):\n        return clip(x)\n")
    report = api.rewrite([package], rules=["graphbreaks"], mode="check", cache=False)
    helpers = next(r for r in report.results if r.path.endswith("helpers.py"))
    assert helpers.edits, "the helper is traced through model.py and rewritten"

    def tested(file_options):
        run = RewriteRun((package,), report.root, None, report.mode, list(report.rules),
                         report.options, list(report.results), "text", file_options)
        return _rewritten_files(run)["pkg/helpers.py"][1].decode()

    assert "_eqrw_where" in tested(report.options_for)
    # without the run's per-file options the copy would miss the edit the report lists
    assert "_eqrw_where" not in tested(None)
