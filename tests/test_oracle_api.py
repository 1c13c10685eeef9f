"""The oracle's commands as functions (``eqrewrite.oracle.api``: ``generate``, ``reduce``,
``campaign``, ``report``; docs/api.md): each returns the typed result its command prints, the
command being a thin layer over it, and a bad argument raises the API's own exception
(``OracleError``, ``NotReproducedError``), never click's and never an exit."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from eqrewrite.oracle import api  # noqa: E402
from eqrewrite.oracle.generate.cli import gen_command  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from eqrewrite.oracle.judging.settings import TargetForm  # noqa: E402
from eqrewrite.oracle.minimising.reduce import Budget, reduce_folder  # noqa: E402
from test_reduce import ARGMIN, reproducer  # noqa: E402


def test_the_apis_errors_are_not_clicks():
    for error in (api.OracleError, api.NotReproducedError):
        assert not issubclass(error, click.ClickException)


def test_generate_returns_the_programs_the_command_writes(tmp_path):
    report = api.generate(3, start=7, out=tmp_path / "api")
    assert isinstance(report, api.GenerateReport) and report.status == 0
    assert [p["seed"] for p in report.programs] == [7, 8, 9] and report.errors == ()
    done = CliRunner().invoke(gen_command, ["--seed", "7", "--count", "3", "-o",
                                            str(tmp_path / "cli")])
    assert done.exit_code == 0, done.output
    made = sorted(p.name for p in (tmp_path / "api").iterdir())
    assert made == sorted(p.name for p in (tmp_path / "cli").iterdir())
    for name in set(made) - {"manifest.json"}:  # the same programs
        assert (tmp_path / "api" / name).read_text() == (tmp_path / "cli" / name).read_text()
    manifests = [json.loads((tmp_path / f / "manifest.json").read_text()) for f in ("api", "cli")]
    assert [{k: m[k] for k in ("config", "programs")} for m in manifests] == [
        {"config": manifests[1]["config"], "programs": list(report.programs)}] * 2


def test_generate_without_a_folder_writes_nothing_and_seeds_may_be_listed(tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = api.generate([3, 1], statements=(2, 3), features={"data-branch": 0})
    assert [p["seed"] for p in report.programs] == [3, 1] and report.out is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("arguments, message", [
    ({"ops": ["add", "nosuch"]}, "unknown op ids: nosuch"),
    ({"features": {"nosuch": 1.0}}, "nosuch"),
])
def test_generate_refuses_bad_arguments_with_the_commands_message(tmp_path, arguments, message):
    with pytest.raises(api.OracleError, match=message):
        api.generate(1, out=tmp_path / "out", **arguments)
    assert not (tmp_path / "out").exists()
    done = CliRunner().invoke(gen_command, ["-o", str(tmp_path / "out"),
                                            *(["--ops", ",".join(arguments["ops"])]
                                              if "ops" in arguments else
                                              ["--feature", "nosuch=1"])])
    assert done.exit_code == 2 and message in done.output


def test_reduce_gives_the_reduction_the_minimiser_gives(tmp_path, monkeypatch):
    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "exact_off_by_one")
    lines: list[str] = []
    result = api.reduce(folder, out=tmp_path / "api", max_tests=10, verify=False,
                        say=lines.append)
    direct = reduce_folder(folder, tmp_path / "direct", Budget(max_tests=10), verify=False)
    assert (result.reduced / "tree" / "argmin.py").read_text() == (
        direct.reduced / "tree" / "argmin.py").read_text() != textwrap.dedent(ARGMIN)
    assert result.tally == direct.tally and result.stopped == "--max-tests 10 reached"
    assert lines and result.to_dict()["target"] == direct.to_dict()["target"]


def test_reduce_raises_the_apis_errors(tmp_path, monkeypatch):
    with pytest.raises(api.OracleError, match="no reproducer"):
        api.reduce(tmp_path)
    folder = reproducer(tmp_path, monkeypatch, ARGMIN, "argmin.py", "lowest",
                        TargetForm.FUNCTION, "exact_off_by_one")
    script = folder / "repro.py"
    script.write_text(script.read_text().replace("'planted:exact_off_by_one'", "'eager'"))
    with pytest.raises(api.NotReproducedError, match="does not reproduce"):
        api.reduce(folder)


def test_campaign_refuses_bad_arguments_before_any_job_starts(tmp_path):
    out = tmp_path / "c"
    for arguments, message in (
            ({"settings": {"backend": "nosuch"}}, "unknown backend 'nosuch'"),
            ({"ops": ["add", "nosuch"]}, "unknown op ids: nosuch"),
            ({"address": "auto"}, "--address is for --executor ray")):
        with pytest.raises(api.OracleError, match=message):
            api.campaign(out, range(1), **{"settings": {"backend": "eager"}, **arguments})
    assert not out.exists()


def test_report_refuses_a_folder_that_is_no_finding(tmp_path):
    with pytest.raises(api.OracleError):
        api.report(tmp_path / "missing")
