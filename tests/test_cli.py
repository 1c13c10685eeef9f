"""The command line: modes, exit codes, machine output, discovery, cache, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from eqrewrite.rewriter.cli import main

TENSOR_CODE = "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x + y\n"
REWRITTEN = TENSOR_CODE.replace("x + y", "torch.add(x, y)")
CLEAN_CODE = "def f(a, b):\n    return a + b\n"


def run_cli(*args: str, cwd: Path | None = None):
    """Run eqrewrite in-process; returns click's Result (exit_code, stdout, stderr)."""
    runner = CliRunner()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(main, [*args, "--no-cache"] if args and args[0] != "rules" else
                             list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(TENSOR_CODE)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN_CODE)
    return tmp_path


def test_rewrite_in_place_exit_0(project):
    clean = project / "pkg" / "clean.py"
    before = clean.stat().st_mtime_ns
    result = run_cli(str(project / "pkg"))
    assert result.exit_code == 0, result.output
    assert (project / "pkg" / "model.py").read_text() == REWRITTEN
    assert clean.read_text() == CLEAN_CODE and clean.stat().st_mtime_ns == before
    assert "1 file rewritten (1 edit), 1 file left unchanged" in result.stderr
    assert not [p for p in (project / "pkg").iterdir() if p.name.endswith(".eqrw")]


def test_check_exits_1_and_writes_nothing(project):
    result = run_cli(str(project / "pkg"), "--check")
    assert result.exit_code == 1
    assert "would rewrite" in result.stderr and "model.py" in result.stderr
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE
    assert run_cli(str(project / "pkg" / "clean.py"), "--check").exit_code == 0


def test_diff_prints_unified_diff(project):
    result = run_cli(str(project / "pkg"), "--diff")
    assert result.exit_code == 1
    assert "-    return x + y\n+    return torch.add(x, y)\n" in result.stdout
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_out_writes_tree_elsewhere(project, tmp_path):
    out = tmp_path / "out"
    result = run_cli(str(project / "pkg"), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "model.py").read_text() == REWRITTEN
    assert (out / "clean.py").read_text() == CLEAN_CODE
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_out_cannot_combine_with_check(project, tmp_path):
    result = run_cli(str(project / "pkg"), "--out", str(tmp_path / "o"), "--check")
    assert result.exit_code == 2 and "--out" in result.stderr


def test_second_run_is_noop(project):
    assert run_cli(str(project / "pkg")).exit_code == 0
    assert run_cli(str(project / "pkg"), "--check").exit_code == 0


def test_json_has_one_record_per_edit(project):
    result = run_cli(str(project / "pkg"), "--format", "json", "--check")
    document = json.loads(result.stdout)
    assert result.exit_code == 1
    assert document["summary"]["changed"] == 1 and document["summary"]["edits"] == 1
    (edit,) = document["edits"]
    assert edit["file"].endswith("model.py") and edit["rule"] == "add-to-torch-add"
    assert edit["start"] == {"line": 5, "col": 12} and edit["end"] == {"line": 5, "col": 17}
    assert (edit["before"], edit["after"]) == ("x + y", "torch.add(x, y)")


def test_sarif_output(project):
    result = run_cli(str(project / "pkg"), "--format", "sarif", "--check")
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    (finding,) = sarif["runs"][0]["results"]
    assert finding["ruleId"] == "add-to-torch-add"
    assert finding["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    replacement = finding["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "torch.add(x, y)"


def test_bad_files_are_reported_and_do_not_stop_others(project):
    pkg = project / "pkg"
    (pkg / "py2.py").write_text("print 'hello'\n")
    (pkg / "binary.py").write_bytes(b"x = 1\ny = '\xff\xfe'\n")
    result = run_cli(str(pkg), "--format", "json")
    assert result.exit_code == 123
    errors = {Path(e["file"]).name: e for e in json.loads(result.stdout)["errors"]}
    assert errors["py2.py"]["line"] == 1 and "syntax error" in errors["py2.py"]["message"]
    assert errors["binary.py"]["line"] == 2 and "cannot decode" in errors["binary.py"]["message"]
    assert f"error: {pkg / 'py2.py'}:1" in result.stderr
    assert (pkg / "model.py").read_text() == REWRITTEN


def test_generated_files_are_skipped(project):
    model = project / "pkg" / "model.py"
    model.write_text("# @generated by protoc\n" + TENSOR_CODE)
    assert run_cli(str(model), "--check").exit_code == 0


def test_encodings_bom_and_crlf_survive(tmp_path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\n"
                      b"def f(x: torch.Tensor):\n    return -x\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport torch\r\ndef f(x: torch.Tensor):\r\n    return -x\r\n")
    assert run_cli(str(tmp_path)).exit_code == 0
    assert latin.read_bytes().endswith(b"s = '\xe9'\ndef f(x: torch.Tensor):\n"
                                       b"    return torch.neg(x)\n")
    assert bom.read_bytes() == (b"\xef\xbb\xbfimport torch\r\ndef f(x: torch.Tensor):\r\n"
                                b"    return torch.neg(x)\r\n")


def test_gitignore_and_skipped_folders(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("ignored/\nskip_me.py\n")
    for folder in ("src", "ignored", ".venv/lib", "build", "src/sub", "other_env"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "other_env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "src" / "sub" / ".gitignore").write_text("local.py\n")
    targets = ["src/a.py", "src/sub/b.py"]
    skipped = ["ignored/c.py", ".venv/lib/d.py", "build/e.py", "src/skip_me.py",
               "src/sub/local.py", "other_env/f.py"]
    for name in targets + skipped:
        (tmp_path / name).write_text(TENSOR_CODE)
    result = run_cli(str(tmp_path), "--format", "json", "--check")
    changed = sorted(Path(e["file"]).relative_to(tmp_path).as_posix()
                     for e in json.loads(result.stdout)["edits"])
    assert changed == targets


def test_pyproject_configuration(project):
    (project / "pyproject.toml").write_text(
        "[tool.eqrewrite]\nexclude = ['pkg/model.py']\nrules = ['default']\n")
    assert run_cli(str(project / "pkg"), "--check").exit_code == 0
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nignore = ['add-to-torch-add']\n")
    assert run_cli(str(project / "pkg"), "--check").exit_code == 0
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nrulez = []\n")
    result = run_cli(str(project / "pkg"), "--check")
    assert result.exit_code == 2 and "unknown key 'rulez'" in result.stderr


def test_pyproject_pack_path_is_relative_to_the_project(project):
    pack = (Path(__file__).parents[1] / "rules" / "default.yaml").read_text()
    (project / "mypack.yaml").write_text(pack.replace("add-to-torch-add", "my-add"))
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nrules = ['mypack.yaml']\n")
    result = run_cli(str(project / "pkg"), "--format", "json", "--check")
    assert json.loads(result.stdout)["edits"][0]["rule"] == "my-add"


def test_rule_pack_error_exits_2(project, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: x\n    description: d\n    pattern: $a +\n    rewrite: $a\n")
    result = run_cli(str(project / "pkg"), "--rules", str(bad))
    assert result.exit_code == 2 and f"{bad}:4:" in result.stderr


def test_no_paths_is_a_usage_error():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 2 and "no paths given" in result.stderr


def test_rules_subcommands():
    listing = run_cli("rules", "list")
    assert listing.exit_code == 0 and "add-to-torch-add" in listing.output
    assert "unsafe" in listing.output
    shown = run_cli("rules", "show", "pow-half-to-sqrt")
    assert shown.exit_code == 0 and "rewrite:  torch.sqrt($a)" in shown.output
    assert "tensor($a)" in shown.output
    assert "unsafe:   Gradients differ at ordinary positive inputs" in shown.output
    assert run_cli("rules", "show", "nope").exit_code == 2
    tested = run_cli("rules", "test")
    assert tested.exit_code == 0 and " 0 failed" in tested.output


def test_rules_test_fails_on_wrong_or_missing_examples(tmp_path):
    pack = tmp_path / "p.yaml"
    pack.write_text("rules:\n  - id: neg\n    description: d\n    pattern: -$a\n"
                    "    rewrite: torch.neg($a)\n    where:\n      - tensor: $a\n")
    result = run_cli("rules", "test", "--rules", str(pack))
    assert result.exit_code == 1 and "rule has no examples" in result.output
    pack.write_text(pack.read_text() + "    examples:\n      - unchanged: |\n"
                    "          import torch\n          def f(x: torch.Tensor):\n"
                    "              return -x\n")
    result = run_cli("rules", "test", "--rules", str(pack))
    assert result.exit_code == 1 and "got:" in result.output


def test_cache_makes_rerun_skip_work(project, tmp_path):
    cache = tmp_path / "cache"
    runner = CliRunner()
    args = [str(project / "pkg"), "--cache-dir", str(cache), "--format", "json"]
    first = json.loads(runner.invoke(main, args).stdout)
    assert first["summary"]["changed"] == 1
    assert list(cache.glob("cache-*.json"))
    second = json.loads(runner.invoke(main, [*args, "--check"]).stdout)
    assert second["summary"] == {**second["summary"], "changed": 0, "unchanged": 2}
    # Editing a file invalidates its entry.
    (project / "pkg" / "clean.py").write_text(TENSOR_CODE)
    third = runner.invoke(main, [*args, "--check"])
    assert third.exit_code == 1


def test_parallel_run_over_many_files(tmp_path):
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(TENSOR_CODE if i % 2 else CLEAN_CODE)
    (tmp_path / "broken.py").write_text("def (:\n")
    result = run_cli(str(tmp_path), "-j", "2", "--format", "json")
    document = json.loads(result.stdout)
    assert result.exit_code == 123
    assert document["summary"]["changed"] == 20 and document["summary"]["errors"] == 1
    assert (tmp_path / "m1.py").read_text() == REWRITTEN


def test_black_formats_changed_files_only(tmp_path):
    (tmp_path / "a.py").write_text(TENSOR_CODE.replace("return x + y", "return x+y;"))
    (tmp_path / "b.py").write_text("x  =  1\n")
    assert run_cli(str(tmp_path), "--black").exit_code == 0
    assert (tmp_path / "a.py").read_text() == REWRITTEN
    assert (tmp_path / "b.py").read_text() == "x  =  1\n"


def test_console_script_runs_without_importing_torch(project):
    code = ("import sys, runpy; sys.argv = ['eqrewrite', sys.argv[1], '--check', '--no-cache'];"
            "\ntry:\n    runpy.run_module('eqrewrite.rewriter', run_name='__main__')\n"
            "except SystemExit as e:\n    code = e.code\n"
            "print('torch' in sys.modules, code)")
    out = subprocess.run([sys.executable, "-c", code, str(project / "pkg")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False 1"


def test_the_gen_command_is_listed_as_itself_and_loaded_when_it_runs():
    # Registered without importing its package (which imports torch): a stand-in with its
    # help, which makes the real command's context when the command runs.
    pytest.importorskip("torch")
    from eqrewrite.oracle.generate.cli import gen_command

    main.plugins()
    listed = main.commands["gen"]
    assert listed is not gen_command
    assert listed.get_short_help_str(45) == gen_command.get_short_help_str(45)
    assert listed.help == gen_command.help
    result = CliRunner().invoke(main, ["gen", "--help"])
    assert result.exit_code == 0 and "--statements LOW:HIGH" in result.output
    result = CliRunner().invoke(main, ["gen", "--count", "1"])
    assert result.exit_code == 2 and "nothing to do" in result.output


def test_out_tree_is_complete_even_with_bad_files(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "bad.py").write_text("def (:\n")
    (source / "good.py").write_text(TENSOR_CODE)
    result = run_cli(str(source), "--out", str(tmp_path / "out"), "--format", "json")
    assert result.exit_code == 123
    assert (tmp_path / "out" / "bad.py").read_text() == "def (:\n"
    assert result.stderr.count("bad.py") == 1  # reported once, on stderr


def test_internal_error_in_one_file_does_not_stop_the_others(project, monkeypatch):
    from eqrewrite.rewriter.running import runner

    real = runner._rewrite

    def flaky(source, rules, *rest):
        if "a + b" in source.text:
            raise IndexError("boom")
        return real(source, rules, *rest)

    monkeypatch.setattr(runner, "_rewrite", flaky)
    result = run_cli(str(project / "pkg"))
    assert result.exit_code == 123 and "internal error (IndexError: boom)" in result.stderr
    assert (project / "pkg" / "model.py").read_text() == REWRITTEN


PSNR = ("import torch\n\n\ndef mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:\n"
        "    return torch.mean((a - b) ** 2)\n\n\n"
        "def psnr(a: torch.Tensor, b: torch.Tensor, max_val: float):\n"
        "    return 10 * torch.log10(max_val ** 2 / mse(a, b))\n")
PSNR_TRUSTED = "torch.mul(torch.reciprocal(mse(a, b)), max_val ** 2)"


@pytest.mark.parametrize(("options", "config", "trusted"), [
    ([], "", True),
    (["--no-trust-scalar-annotations"], "", False),
    ([], "trust-scalar-annotations = false\n", False),
    (["--trust-scalar-annotations"], "trust-scalar-annotations = false\n", True),
])
def test_scalar_annotations_are_trusted_only_when_set(tmp_path, options, config, trusted):
    # psnr(a, b, max_val=torch.tensor(1.7)) breaks the annotation; reciprocal-then-multiply
    # is only exact for a Python number on the left of `/`.
    (tmp_path / "pyproject.toml").write_text("[tool.eqrewrite]\n" + config)
    (tmp_path / "metrics.py").write_text(PSNR)
    result = run_cli(str(tmp_path / "metrics.py"), *options)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "metrics.py").read_text()
    assert (PSNR_TRUSTED in text) is trusted
    assert "torch.sub(a, b)" in text  # tensors are proven either way


def test_trust_scalar_annotations_must_be_a_boolean(project):
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\ntrust-scalar-annotations = 'no'\n")
    result = run_cli(str(project / "pkg"), "--check")
    assert result.exit_code == 2
    assert "trust-scalar-annotations must be true or false" in result.stderr


# -- output trees (--out, --oracle's temporary tree) ----------------------------------------


def test_out_files_keep_the_sources_mode(project, tmp_path):
    (project / "pkg" / "model.py").chmod(0o755)
    (project / "pkg" / "clean.py").chmod(0o640)
    out = tmp_path / "out"
    assert run_cli(str(project / "pkg"), "--out", str(out)).exit_code == 0
    assert (out / "model.py").stat().st_mode & 0o7777 == 0o755
    assert (out / "clean.py").stat().st_mode & 0o7777 == 0o640


def test_out_rerun_names_the_copies_and_rewrites_nothing(project, tmp_path):
    out = tmp_path / "out"
    first = run_cli(str(project / "pkg"), "--out", str(out))
    assert f"wrote {out / 'model.py'} (1 edit)" in first.stderr
    before = (out / "model.py").stat().st_mtime_ns
    second = run_cli(str(project / "pkg"), "--out", str(out))
    assert f"{out / 'model.py'} is up to date (1 edit)" in second.stderr
    assert "rewrote" not in first.stderr + second.stderr
    assert (out / "model.py").stat().st_mtime_ns == before


def test_out_inside_the_source_folder_is_not_processed_again(project):
    pkg = project / "pkg"
    for _ in range(2):
        result = run_cli(str(pkg), "--out", str(pkg / "out"), "--format", "json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["summary"]["files"] == 2  # out/ is not rediscovered
    assert not (pkg / "out" / "out").exists()
    assert (pkg / "out" / "model.py").read_text() == REWRITTEN


def test_out_equal_to_the_source_folder_is_a_usage_error(project):
    pkg = project / "pkg"
    result = run_cli(str(pkg), "--out", str(project / "pkg" / ".." / "pkg"))
    assert result.exit_code == 2
    assert "is the source folder" in result.stderr and "leave out --out" in result.stderr
    assert (pkg / "model.py").read_text() == TENSOR_CODE


def test_out_that_would_overwrite_a_source_file_is_a_usage_error(project):
    model = project / "pkg" / "model.py"
    result = run_cli(str(model), "--out", str(project / "pkg"))
    assert result.exit_code == 2 and "would overwrite the source" in result.stderr
    assert model.read_text() == TENSOR_CODE


def test_oracle_without_out_names_the_temporary_copy_and_removes_it(project, monkeypatch):
    from eqrewrite.oracle import cli as oracle_cli

    seen = {}

    def validate(run, options, rollback):
        seen["tree"] = run.out_root
        seen["rewritten"] = (run.out_root / "model.py").read_text()
        return 0, {}

    monkeypatch.setattr(oracle_cli, "validate_rewrite", validate)
    result = run_cli(str(project / "pkg"), "--oracle")
    assert result.exit_code == 0, result.output
    assert seen["rewritten"] == REWRITTEN
    assert f"wrote {seen['tree'] / 'model.py'} (1 edit)" in result.stderr
    assert "rewrote" not in result.stderr
    assert not seen["tree"].exists()
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


# -- cache keys ---------------------------------------------------------------------------


def _seeds_with_different_set_orders() -> tuple[str, str]:
    """Two PYTHONHASHSEED values under which ``{'forward', 'compiled'}`` iterates differently."""
    orders: dict[str, str] = {}
    for seed in map(str, range(40)):
        shown = subprocess.run([sys.executable, "-c", "print(list({'forward', 'compiled'}))"],
                               env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True,
                               text=True, check=True).stdout
        orders.setdefault(shown, seed)
        if len(orders) == 2:
            return tuple(orders.values())
    raise AssertionError("no two hash seeds order the set differently")


def test_cache_key_does_not_depend_on_the_hash_seed(project, tmp_path):
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "eqrewrite.rewriter", str(project / "pkg" / "clean.py"),
               "--scope", "forward", "--scope", "compiled", "--cache-dir", str(cache),
               "--format", "json", "--check"]
    for seed in _seeds_with_different_set_orders():
        completed = subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": seed},
                                   capture_output=True, text=True)
        assert completed.returncode == 0, completed.stderr
    assert len(list(cache.glob("cache-*.json"))) == 1  # the second run used the first's cache


# -- machine output: one document on stdout ------------------------------------------------


@pytest.mark.parametrize("flag", ["--diff", "--check"])
def test_json_with_diff_or_check_is_one_document_with_the_diffs_inside(project, flag):
    result = run_cli(str(project / "pkg"), "--format", "json", flag)
    assert result.exit_code == 1
    document = json.loads(result.stdout)  # nothing else on stdout
    files = {Path(f["path"]).name: f for f in document["files"]}
    assert files["model.py"]["status"] == "changed" and files["model.py"]["written"] is False
    if flag == "--diff":
        assert "+    return torch.add(x, y)\n" in files["model.py"]["diff"]
    else:
        assert "diff" not in files["model.py"]
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_sarif_with_diff_is_one_document(project):
    result = run_cli(str(project / "pkg"), "--format", "sarif", "--diff")
    assert result.exit_code == 1 and json.loads(result.stdout)["version"] == "2.1.0"


def test_json_alone_rewrites_in_place_and_says_what_was_written(project):
    result = run_cli(str(project / "pkg"), "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["mode"] == "write"
    written = {Path(f["path"]).name: f["written"] for f in document["files"]}
    assert written == {"model.py": True, "clean.py": False}
    assert (project / "pkg" / "model.py").read_text() == REWRITTEN


def test_json_out_mode_names_each_written_copy(project, tmp_path):
    out = tmp_path / "out"
    document = json.loads(run_cli(str(project / "pkg"), "--out", str(out), "--format",
                                  "json").stdout)
    outputs = {Path(f["path"]).name: f.get("output") for f in document["files"]}
    assert outputs == {"model.py": str(out / "model.py"), "clean.py": str(out / "clean.py")}


class _ProbeStep:
    """A plugin step that reports a record, as the oracle will."""

    name = "probe"

    def __init__(self, status: int):
        self.status = status

    def prepare(self, flags, paths, mode, out_root):
        return out_root

    def finish(self, flags, run):
        from eqrewrite.rewriter.plugins import StepResult

        return StepResult(self.status, {"files": len(run.results), "format": run.output_format})


def test_step_records_go_into_the_json_document(project, monkeypatch):
    registry = main.plugins()
    monkeypatch.setattr(registry, "steps", [*registry.steps, _ProbeStep(0)])
    result = run_cli(str(project / "pkg"), "--format", "json", "--check")
    assert json.loads(result.stdout)["steps"] == {"probe": {"files": 2, "format": "json"}}
    assert result.exit_code == 1  # a step's 0 does not hide the changes --check found
    monkeypatch.setattr(registry, "steps", [*registry.steps, _ProbeStep(3)])
    assert run_cli(str(project / "pkg"), "--format", "json").exit_code == 3


# -- help, and paths named like commands ---------------------------------------------------


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_shows_the_rewrite_usage_and_options(flag):
    result = CliRunner().invoke(main, [flag], prog_name="eqrewrite")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: eqrewrite [OPTIONS] PATH...\n")
    for option in ("--check", "--diff", "--out", "--format", "--version", "Commands:", "rules"):
        assert option in result.output
    assert "``" not in result.output and "[PATHS]" not in result.output
    assert "write such a path as ./NAME or NAME/" in " ".join(result.output.split())


def test_a_folder_named_like_a_command_is_reached_as_a_path(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "model.py").write_text(TENSOR_CODE)
    for spelling in (["./rules"], ["rules/"], ["rewrite", "rules"]):
        result = run_cli(*spelling, "--check", cwd=tmp_path)
        assert result.exit_code == 1 and "would rewrite" in result.stderr, spelling


def test_a_command_name_stays_the_command_and_says_how_to_reach_the_path(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "model.py").write_text(TENSOR_CODE)
    wrong = run_cli("rules", "--check", cwd=tmp_path)
    assert wrong.exit_code == 2
    assert "note: 'rules' is the 'eqrewrite rules' command" in wrong.stderr
    assert "write ./rules or 'eqrewrite rewrite rules ...'" in wrong.stderr
    listing = run_cli("rules", "list", cwd=tmp_path)
    assert listing.exit_code == 0 and "add-to-torch-add" in listing.output
    assert (tmp_path / "rules" / "model.py").read_text() == TENSOR_CODE


# -- clear messages for missing tools, unknown ids, odd inputs ------------------------------


def test_black_missing_says_how_to_install_it(project, monkeypatch):
    monkeypatch.setitem(sys.modules, "black", None)  # makes 'import black' fail
    result = run_cli(str(project / "pkg"), "--black")
    assert result.exit_code == 2
    assert "pip install 'eqrewrite[black]'" in result.stderr
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_unknown_ignored_rule_id_names_close_matches(project):
    result = run_cli(str(project / "pkg"), "--ignore", "add-to-torch-ad")
    assert result.exit_code == 2
    assert "--ignore: no rule 'add-to-torch-ad'" in result.stderr
    assert "did you mean add-to-torch-add" in result.stderr
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nignore = ['sub-to-torchsub']\n")
    result = run_cli(str(project / "pkg"))
    assert result.exit_code == 2
    assert f"{project / 'pyproject.toml'}: [tool.eqrewrite] ignore: no rule 'sub-to-torchsub'" \
        in result.stderr and "did you mean sub-to-torch-sub" in result.stderr


def test_configured_ignore_may_name_rules_of_the_configured_packs(project):
    # The project ignores a default-pack rule; a run with another pack must not fail on it.
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nignore = ['add-to-torch-add']\n")
    assert run_cli(str(project / "pkg"), "--rules", "graphbreaks", "--check").exit_code == 0


def test_rules_commands_use_the_packs_configured_in_pyproject(project):
    pack = (Path(__file__).parents[1] / "rules" / "default.yaml").read_text()
    (project / "mypack.yaml").write_text(pack.replace("add-to-torch-add", "my-add"))
    (project / "pyproject.toml").write_text("[tool.eqrewrite]\nrules = ['mypack.yaml']\n")
    listing = run_cli("rules", "list", cwd=project)
    assert listing.exit_code == 0 and "my-add" in listing.output
    assert "graphbreaks" not in listing.output and "add-to-torch-add" not in listing.output
    assert run_cli("rules", "show", "my-add", cwd=project).exit_code == 0
    tested = run_cli("rules", "test", cwd=project)
    assert tested.exit_code == 0 and "mypack.yaml" in tested.output


def test_rules_show_unknown_id_names_close_matches():
    result = run_cli("rules", "show", "pow-half-to-sqr")
    assert result.exit_code == 2 and "did you mean pow-half-to-sqrt" in result.stderr


def test_sarif_lists_failed_files_as_tool_execution_notifications(project):
    (project / "pkg" / "broken.py").write_text("def (:\n")
    result = run_cli(str(project / "pkg"), "--format", "sarif", "--check")
    assert result.exit_code == 123
    run = json.loads(result.stdout)["runs"][0]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error" and "syntax error" in notification["message"]["text"]
    location = notification["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("broken.py")
    assert location["region"]["startLine"] == 1
    assert [r["ruleId"] for r in run["results"]] == ["add-to-torch-add"]  # findings only


def test_sarif_run_without_failures_is_successful(project):
    run = json.loads(run_cli(str(project / "pkg"), "--format", "sarif").stdout)["runs"][0]
    assert run["invocations"] == [{"executionSuccessful": True,
                                   "toolExecutionNotifications": []}]


def test_missing_rule_pack_names_the_path_and_the_cause(project):
    result = run_cli(str(project / "pkg"), "--rules", "nope.yaml")
    assert result.exit_code == 2
    assert "error: nope.yaml: no such file, and no packaged pack of that name" in result.stderr
    assert ":0:0" not in result.stderr
    folder = run_cli(str(project / "pkg"), "--rules", str(project))
    assert folder.exit_code == 2 and f"error: {project}: a folder, not a rule pack" \
        in folder.stderr


@pytest.mark.parametrize("data", [b"\x00\x01\x02\x03binary", b"\x89PNG\r\n\x1a\n\xff\xfe\xfa"])
def test_binary_file_says_so(tmp_path, data):
    (tmp_path / "image.py").write_bytes(data)
    result = run_cli(str(tmp_path))
    assert result.exit_code == 123
    assert f"error: {tmp_path / 'image.py'}: binary file, not Python source" in result.stderr


def test_undeclared_latin1_is_not_called_binary(tmp_path):
    (tmp_path / "old.py").write_bytes(b"s = '\xe9t\xe9'\n")
    result = run_cli(str(tmp_path))
    assert result.exit_code == 123 and "binary" not in result.stderr


def test_folder_without_python_files_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    result = run_cli(str(tmp_path))
    assert result.exit_code == 0
    assert f"no Python files found in {tmp_path}" in result.stderr
