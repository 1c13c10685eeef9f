"""``api.rewrite`` takes one options value, ``RewriteSettings``, and hands it on whole: its
keywords are that value's fields; the command line builds the value from its options and
makes one call. The commands share their click options (``plugins.py``), and a plugin step
reads its options through typed ``Flags``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import get_type_hints

import click
import pytest
from click.testing import CliRunner
from eqrewrite.rewriter import api
from eqrewrite.rewriter.audit.cli import audit_command
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.plugins import Flags

TENSOR_CODE = "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x + y\n"
BREAKING_CODE = '''\
import torch


class M(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        print("mean", x.mean())
        return x
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(TENSOR_CODE)
    (tmp_path / "pkg" / "net.py").write_text(BREAKING_CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- the value --------------------------------------------------------------------------------

def test_the_settings_take_every_spelling_and_stay_frozen():
    settings = api.RewriteSettings(rules=["default"], mode="check", scope=["forward"],
                                   out="out", cache_dir="cache", exclude="tests/*")
    assert settings.rules == ("default",) and settings.scope == ("forward",)
    assert settings.exclude == ("tests/*",)  # one text is one glob, not its characters
    assert settings.mode is api.Mode.CHECK
    assert settings.out == Path("out") and settings.cache_dir == Path("cache")
    assert settings == api.RewriteSettings(rules=("default",), mode=api.Mode.CHECK,
                                           scope=("forward",), out=Path("out"),
                                           cache_dir=Path("cache"), exclude=("tests/*",))
    assert hash(settings) == hash(dataclasses.replace(settings))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.mode = api.Mode.WRITE  # type: ignore[misc]
    with pytest.raises(api.OptionError, match="unknown mode 'fix'"):
        api.RewriteSettings(mode="fix")


def test_the_keywords_are_the_settings_fields():
    fields = [f.name for f in dataclasses.fields(api.RewriteSettings)]
    assert list(get_type_hints(api.RewriteKeywords)) == fields
    assert set(api.RewriteKeywords.__optional_keys__) == set(fields)


def test_replaced_refuses_an_unknown_keyword():
    settings = api.RewriteSettings()
    assert settings.replaced() is settings
    assert settings.replaced(mode="diff", jobs=2) == api.RewriteSettings(mode="diff", jobs=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'modes'"):
        settings.replaced(modes="check")  # type: ignore[call-arg]


# -- the function -----------------------------------------------------------------------------

def test_the_value_and_the_keywords_make_the_same_run(project):
    by_value = api.rewrite("pkg", api.RewriteSettings(mode="check", cache=False))
    by_keywords = api.rewrite("pkg", mode="check", cache=False)
    assert json.loads(by_value.to_json()) == json.loads(by_keywords.to_json())
    assert by_value.settings == by_keywords.settings == api.RewriteSettings(mode="check",
                                                                            cache=False)
    assert by_value.status == 1  # check mode found a change
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_keywords_replace_the_fields_of_the_value(project):
    report = api.rewrite("pkg", api.RewriteSettings(mode="check", cache=False), mode="diff")
    assert report.mode is api.Mode.DIFF and report.settings.mode is api.Mode.DIFF
    assert report.changed[0].diff  # diff mode holds the diffs
    written = api.rewrite("pkg", api.RewriteSettings(cache=False), out="out")
    assert written.mode is api.Mode.OUT and written.settings.out == Path("out")
    assert (project / "out" / "model.py").read_text() != TENSOR_CODE
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE


def test_an_unknown_keyword_is_a_type_error_before_anything_runs(project):
    with pytest.raises(TypeError, match="unexpected keyword argument 'rule'"):
        api.rewrite("pkg", rule=["default"])  # type: ignore[call-arg]
    assert (project / "pkg" / "model.py").read_text() == TENSOR_CODE
    assert not (project / ".eqrewrite_cache").exists()


def test_a_file_error_is_exit_status_123(project):
    (project / "pkg" / "broken.py").write_text("def f(:\n")
    assert api.rewrite("pkg", mode="check", cache=False).status == 123


# -- the command line: one value, one call ----------------------------------------------------

def test_the_command_builds_one_value_and_makes_one_call(project, monkeypatch):
    calls = []
    real = api.rewrite

    def spy(paths, settings=None, **keywords):
        calls.append((paths, settings, keywords))
        return real(paths, settings, **keywords)

    monkeypatch.setattr(api, "rewrite", spy)
    result = CliRunner().invoke(main, ["pkg", "--check", "-r", "default", "--scope", "forward",
                                       "--ignore", "add-to-torch-add", "--no-cache", "-j", "1",
                                       "--exclude", "skip/*", "--trust-scalar-annotations"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output  # the one change is ignored
    ((paths, settings, keywords),) = calls
    assert paths == (Path("pkg"),) and keywords == {}
    assert settings == api.RewriteSettings(
        rules=("default",), mode="check", scope=("forward",), ignore=("add-to-torch-add",),
        exclude=("skip/*",), trust_scalar_annotations=True, cache=False, jobs=1)


def test_the_commands_exit_status_is_the_reports(project):
    result = CliRunner().invoke(main, ["pkg", "--check", "--no-cache"], catch_exceptions=False)
    assert result.exit_code == api.rewrite("pkg", mode="check", cache=False).status == 1


# -- the audit's report -----------------------------------------------------------------------

def test_the_audit_report_has_the_commands_status_and_takes_the_dynamic_record(project):
    report = api.audit("pkg", cache=False)
    (finding,) = report.findings
    assert report.status == 1
    result = CliRunner().invoke(main, ["audit", "pkg", "--no-cache"], catch_exceptions=False)
    assert result.exit_code == report.status
    record = {"breaks": [{"frame": {"file": finding["file"], "line": finding["line"]},
                          "gb_id": None, "count": 2, "targets": ["net.py::M"]}]}
    report.add_dynamic(record)
    assert report.document["dynamic"] == record
    assert record["breaks"][0]["finding"] == finding["id"]
    assert report.findings[0]["observed"]["breaks"] == 2


# -- the options the commands share -----------------------------------------------------------

def _option(command: click.Command, name: str) -> click.Option:
    (found,) = [p for p in command.params if isinstance(p, click.Option) and p.name == name]
    return found


@pytest.mark.parametrize("name", ["rule_specs", "ignored", "excludes", "assume_tensor_params",
                                  "trust_scalar_annotations", "jobs", "no_cache", "cache_dir",
                                  "quiet"])
def test_the_rewrite_and_audit_commands_share_their_option_definitions(name):
    rewrite, audit = _option(main.commands["rewrite"], name), _option(audit_command, name)
    for attribute in ("opts", "secondary_opts", "multiple", "is_flag", "default"):
        assert getattr(rewrite, attribute) == getattr(audit, attribute), attribute
    assert type(rewrite.type) is type(audit.type)


def test_the_run_and_audit_commands_share_the_dynamo_switches():
    run = main.commands["run"]
    for name in ("dynamo", "dynamic_sizes"):
        one, other = _option(run, name), _option(audit_command, name)
        assert (one.opts, one.multiple, one.metavar) == (other.opts, other.multiple,
                                                         other.metavar)


# -- what a plugin step reads -----------------------------------------------------------------

def test_flags_read_each_value_with_its_type():
    flags = Flags({"run": True, "backend": "eager", "dynamo": ("a=1", "b=2"), "timeout": 12,
                   "parallel": 3, "reproducers": Path("r"), "dynamic": False,
                   "fullgraph": None})
    assert flags.flag("run") and not flags.flag("absent") and not flags.flag("fullgraph")
    assert flags.switch("dynamic") is False and flags.switch("fullgraph") is None
    assert flags.text("backend") == "eager" and flags.text("absent") is None
    assert flags.texts("dynamo") == ("a=1", "b=2") and flags.texts("absent") == ()
    assert flags.number("timeout", 300.0) == 12.0 and flags.number("absent", 1.5) == 1.5
    assert flags.integer("parallel", 1) == 3 and flags.path("reproducers") == Path("r")
    assert dict(flags.without(["run", "dynamo"])) == {
        k: v for k, v in flags.items() if k not in ("run", "dynamo")}
    assert len(flags) == 8 and flags["backend"] == "eager"
    wrong = {"true or false": lambda: flags.flag("backend"),
             "a text": lambda: flags.text("timeout"), "texts": lambda: flags.texts("backend"),
             "a path": lambda: flags.path("timeout"),
             "a whole number": lambda: flags.integer("run", 1),  # a flag is no number
             "a number": lambda: flags.number("run", 1.0)}
    for expected, read in wrong.items():
        with pytest.raises(TypeError, match=f"option '(backend|timeout|run)': expected "
                                            f"{expected}, got"):
            read()
