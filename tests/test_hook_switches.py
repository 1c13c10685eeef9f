"""Dynamo switches set by the import hook (``eqrewrite run --dynamo-config``,
``--dynamic-sizes``, ``install_import_hook(dynamo_config=...)``): the parsing and the checks
in this process, the switches in force in a fresh interpreter for the rest."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from eqrewrite.rewriter.api import DYNAMIC_SIZES, SwitchError, parse_switches
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.switches import DynamoSwitches, parse_switch_value

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed")

MODEL = '''\
"""A model whose forward breaks graphs at a print, an .item() and a nonzero."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2
        print("total:", y.sum())
        n = y.sum().item()
        mask = torch.nonzero(y > n / 4)
        return y + n, mask.float().sum()
'''

# Prints "RESULT {json}": the switches as the program sees them once Dynamo is imported.
SWITCHES = '''\
import json

import torch
import swpkg

config = torch._dynamo.config
print("RESULT " + json.dumps({"scalar": config.capture_scalar_outputs,
                              "shapes": config.capture_dynamic_output_shape_ops}))
'''

# Prints "RESULT {json}": graphs compiled for one call (a backend that counts them, eager
# otherwise) and whether the outputs equal eager's. fullgraph=True would not tell: in torch
# 2.13 it captures .item() and data-dependent shapes whatever the switches say.
GRAPHS = '''\
import json

import torch
import swpkg.model as model

graphs = []


def counting(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


m = model.Model()
x = torch.arange(4.0)
eager = m(x)
compiled = torch.compile(m, backend=counting)(x)
print("RESULT " + json.dumps({
    "graphs": len(graphs), "same": all(torch.equal(a, b) for a, b in zip(eager, compiled))}))
'''


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """``swpkg`` (a package with ``Model``) under ``tmp_path/site``, which is returned."""
    root = tmp_path / "site" / "swpkg"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text('"""A package for the hook to rewrite."""\n')
    (root / "model.py").write_text(MODEL)
    return root.parent


def _python(tmp_path: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS", None)  # the defaults must be off
    env.pop("TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS", None)
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def _run(tmp_path: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _python(tmp_path, site, "-m", "eqrewrite.rewriter", "run", "--package", "swpkg",
                   *args)


def _result(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1].removeprefix("RESULT "))


def _script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


# -- in this process ----------------------------------------------------------------------

def test_values_are_read_as_the_oracle_reads_them():
    from eqrewrite.oracle.judging.settings import parse_value

    for text in ("true", "False", "none", "null", "3", "-2", "0.5", "1e3", "inductor", ""):
        assert parse_switch_value(text) == parse_value(text), text
    assert parse_switches(["a=true", " b = 2 ", "c=0.5", "d=text", "e=none"]) == {
        "a": True, "b": 2, "c": 0.5, "d": "text", "e": None}


def test_dynamic_sizes_is_both_capture_switches_and_an_explicit_switch_wins():
    assert parse_switches([], dynamic_sizes=True) == {
        "capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}
    assert parse_switches(["capture_scalar_outputs=false"], dynamic_sizes=True) == {
        "capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": True}
    assert parse_switches([]) == {}
    assert dict(DYNAMIC_SIZES) == parse_switches([], dynamic_sizes=True)


@pytest.mark.parametrize("pair", ["capture_scalar_outputs", "=true", " =1"])
def test_a_switch_without_a_name_and_value_is_refused(pair):
    with pytest.raises(SwitchError, match="expected KEY=VALUE"):
        parse_switches([pair])


@pytest.mark.parametrize("name", ["capture-scalar-outputs", "", "a..b", 3])
def test_a_name_that_cannot_be_a_switch_is_refused_at_once(name):
    with pytest.raises(SwitchError, match="is not a torch._dynamo.config switch name"):
        DynamoSwitches({name: True})


def _config(**values: object) -> types.ModuleType:
    """A stand-in for torch._dynamo.config: a module whose ``_config`` names its switches."""
    module = types.ModuleType("config")
    vars(module).update(values, _config=dict.fromkeys(values))
    return module


def test_an_unknown_switch_is_named_with_its_close_matches():
    config = _config(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False)
    with pytest.raises(SwitchError, match=r"unknown torch\._dynamo\.config switch "
                                        r"'capture_scaler_outputs' \(did you mean "
                                        r"capture_scalar_outputs"):
        DynamoSwitches({"capture_scaler_outputs": True}).apply(config, "import")
    with pytest.raises(SwitchError, match=r"switch 'zzz'$"):
        DynamoSwitches({"zzz": True}).check(config)
    assert config.capture_scalar_outputs is False


def test_a_boolean_switch_takes_only_true_or_false():
    # "off" would be a non-empty string, which Dynamo would read as true.
    config = _config(capture_scalar_outputs=False, cache_size_limit=8)
    with pytest.raises(SwitchError, match="capture_scalar_outputs must be true or false, "
                                        "got 'off'"):
        DynamoSwitches({"capture_scalar_outputs": "off"}).check(config)
    switches = DynamoSwitches({"capture_scalar_outputs": True, "cache_size_limit": 16})
    switches.apply(config, "installation")
    assert (config.capture_scalar_outputs, config.cache_size_limit) == (True, 16)
    assert switches.to_json() == {"switches": {"capture_scalar_outputs": True,
                                               "cache_size_limit": 16},
                                  "applied": "installation"}


def test_run_refuses_a_malformed_switch_before_running_anything(tmp_path):
    script = _script(tmp_path, "open('ran', 'w').close()\n")
    result = CliRunner().invoke(main, ["run", "-p", "swpkg", "--dynamo-config", "oops",
                                       script])
    assert result.exit_code == 2
    assert "--dynamo-config: expected KEY=VALUE, got 'oops'" in result.output
    assert not (tmp_path / "ran").exists()


# -- in a fresh interpreter ---------------------------------------------------------------

@needs_torch
def test_dynamic_sizes_sets_both_switches_when_dynamo_is_imported(tmp_path, site):
    script = _script(tmp_path, SWITCHES)
    assert _result(_python(tmp_path, site, script)) == {"scalar": False, "shapes": False}
    done = _run(tmp_path, site, "--dynamic-sizes", "--report", "hook.json", script)
    assert _result(done) == {"scalar": True, "shapes": True}
    report = json.loads((tmp_path / "hook.json").read_text())
    assert report["dynamo_config"] == {"applied": "import", "switches": {
        "capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}}


@needs_torch
def test_one_dynamo_config_switch_sets_that_one_only(tmp_path, site):
    script = _script(tmp_path, SWITCHES)
    done = _run(tmp_path, site, "--dynamo-config", "capture_scalar_outputs=true", script)
    assert _result(done) == {"scalar": True, "shapes": False}


@needs_torch
def test_an_unknown_switch_fails_run_with_exit_2_and_no_traceback(tmp_path, site):
    script = _script(tmp_path, SWITCHES)
    done = _run(tmp_path, site, "--dynamo-config", "capture_scaler_outputs=true", script)
    assert done.returncode == 2, done.stderr
    assert ("error: unknown torch._dynamo.config switch 'capture_scaler_outputs' "
            "(did you mean capture_scalar_outputs") in done.stderr
    assert "Traceback" not in done.stderr and "RESULT" not in done.stdout


@needs_torch
def test_the_api_sets_the_switches_at_once_when_dynamo_is_already_imported(tmp_path, site):
    script = _script(tmp_path, '''
        import json
        import sys

        import torch._dynamo.config as config
        from eqrewrite.rewriter.api import DYNAMIC_SIZES, SwitchError, install_import_hook

        finders = list(sys.meta_path)
        try:
            install_import_hook(["swpkg"], dynamo_config={"capture_scalar_output": True})
        except SwitchError as error:
            refused = str(error)
        hook = install_import_hook(["swpkg"], dynamo_config=DYNAMIC_SIZES)
        print("RESULT " + json.dumps({
            "refused": refused, "left_no_hook": sys.meta_path[1:] == finders,
            "scalar": config.capture_scalar_outputs,
            "shapes": config.capture_dynamic_output_shape_ops,
            "report": hook.report()["dynamo_config"]}))
        ''')
    result = _result(_python(tmp_path, site, script))
    assert result["refused"].startswith(
        "unknown torch._dynamo.config switch 'capture_scalar_output' (did you mean "
        "capture_scalar_outputs")
    assert result["left_no_hook"] and result["scalar"] and result["shapes"]
    assert result["report"]["applied"] == "installation"


@needs_torch
def test_the_rewrite_and_dynamic_sizes_together_leave_one_graph(tmp_path, site):
    # The print is the rewrite's; the .item() and the nonzero are the switches'.
    script = _script(tmp_path, GRAPHS)
    plain = _result(_python(tmp_path, site, script))
    rewritten = _result(_run(tmp_path, site, script))
    scalars = _result(_run(tmp_path, site, "--dynamo-config", "capture_scalar_outputs=true",
                           script))
    both = _result(_run(tmp_path, site, "--dynamic-sizes", script))
    assert [r["graphs"] for r in (plain, rewritten, scalars, both)] == [4, 3, 2, 1]
    assert all(r["same"] for r in (plain, rewritten, scalars, both))
