"""``eqrewrite PATH --oracle [--rollback]`` as one function of the oracle's API,
``validated_rewrite`` (docs/api.md): the rewrite through the rewriter's API, the validation,
the rollback, typed results; the command's step runs the same core (``validate_rewritten``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from eqrewrite.oracle import api  # noqa: E402
from eqrewrite.oracle import cli as oracle_cli  # noqa: E402
from eqrewrite.oracle.judging.judge import Verdict  # noqa: E402
from eqrewrite.oracle.judging.settings import CompileSettings  # noqa: E402
from eqrewrite.rewriter.api import Mode, RewriteSettings  # noqa: E402
from test_rollback import MLP, RETURN_LINE, TWO_ROUND_PACK, _last_return  # noqa: E402

EAGER = api.OracleOptions(settings={"backend": "eager"}, count_breaks=False)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project holding one target (src/good.py) and a pack whose second round breaks it."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pack.yaml").write_text(TWO_ROUND_PACK)
    source = tmp_path / "src"
    source.mkdir()
    (source / "good.py").write_text(textwrap.dedent(MLP))
    return source


def _settings(tree: Path, **fields: object) -> RewriteSettings:
    return RewriteSettings(rules=(str(tree.parent / "pack.yaml"),), cache=False, **fields)


def test_the_rollback_reverts_the_breaking_edit_and_keeps_the_others(tree):
    out = tree.parent / "out"
    original = (tree / "good.py").read_text()
    done = api.validated_rewrite(tree, _settings(tree, out=out), rollback=True, options=EAGER)
    assert isinstance(done, api.ValidatedRewrite) and done.status == 0
    assert done.rewrite.mode is Mode.OUT and done.tree == out
    (target,) = done.oracle.targets
    assert target.target == "good.py::Mlp" and target.verdict is Verdict.PASSED
    (reverted,) = done.reverted
    assert (reverted.file, reverted.line, reverted.rule) == ("good.py", RETURN_LINE,
                                                             "swap-sub-call")
    assert "changed the behaviour of good.py::Mlp" in reverted.reason
    # Every other edit stays in the tree, the correct second-round one included.
    assert _last_return((out / "good.py").read_text()) == (
        "return torch.sub(h, y) * 2 + torch.negative(h)")
    assert (tree / "good.py").read_text() == original  # the sources are never written
    document = json.loads(done.to_json())
    assert document["mode"] == "out" and document["summary"]["edits"] == 4
    (record,) = document["steps"]["oracle"]["targets"]
    assert record["verdict"] == "passed"


def test_without_rollback_the_change_fails_and_the_temporary_tree_goes(tree):
    done = api.validated_rewrite(tree, _settings(tree), options=EAGER)
    assert done.tree is None and done.rewrite.out is not None
    assert not done.rewrite.out.exists()  # the temporary tree is removed
    (target,) = done.oracle.targets
    assert target.verdict is Verdict.REWRITE_CHANGED_BEHAVIOUR
    assert done.status == 1 and done.reverted == [] and done.oracle.failed == [target]
    assert (tree / "good.py").read_text() == textwrap.dedent(MLP)


def test_usage_problems_and_file_errors_start_no_worker(tree, monkeypatch):
    def no_validation(*args: object, **kwargs: object) -> None:
        raise AssertionError("validated although it should not have")

    monkeypatch.setattr(api, "validate_rewritten", no_validation)
    for settings in (_settings(tree, mode="check"), _settings(tree, mode="diff")):
        with pytest.raises(api.OracleError, match="--oracle takes one folder"):
            api.validated_rewrite(tree, settings)
    with pytest.raises(api.OracleError, match="--oracle takes one folder"):
        api.validated_rewrite(tree / "good.py", _settings(tree))
    (tree / "broken.py").write_text("def f(:\n")
    out = tree.parent / "out"
    done = api.validated_rewrite(tree, _settings(tree, out=out))
    assert done.oracle is None and done.status == 123 and done.reverted == []
    assert len(done.rewrite.errors) == 1 and done.tree == out


def test_the_commands_step_runs_the_same_core_with_its_options(tree, monkeypatch):
    from click.testing import CliRunner
    from eqrewrite.rewriter.cli import main

    seen: dict[str, object] = {}

    def core(root, rewritten, results, rules, rewrite_options, options, rollback,
             progress=False):
        seen.update(root=root, rewritten=(rewritten / "good.py").read_text(),
                    options=options, rollback=rollback,
                    changed=[Path(r.path).name for r in results if r.edits])
        return api.OracleReport(root, rewritten, (), (), (), CompileSettings())

    monkeypatch.setattr(oracle_cli, "validate_rewritten", core)
    result = CliRunner().invoke(main, [
        str(tree), "--rules", str(tree.parent / "pack.yaml"), "--no-cache", "--oracle",
        "--rollback", "--backend", "eager", "--timeout", "12", "--no-breaks",
        "--dynamo-config", "capture_scalar_outputs=true", "--parallel", "1"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    options = seen["options"]
    assert isinstance(options, api.OracleOptions)
    assert options.settings == {"backend": "eager", "dynamo.capture_scalar_outputs": True}
    assert (options.timeout, options.count_breaks, options.parallel) == (12.0, False, 1)
    assert seen["rollback"] is True and seen["root"] == tree and seen["changed"] == ["good.py"]
    assert "torch.subtract(y, h)" in str(seen["rewritten"])  # the tree the rewrite wrote
