"""The dynamic audit with Dynamo switches (``eqrewrite audit --run --dynamic-sizes``,
``--dynamo-config KEY=VALUE``): every target measured with default settings and with the
switches, original and rewritten, the breaks in each cell, what removes each break site,
and whether the rewrite stays exact under both modes. Backend ``eager``: the breaks are
Dynamo's.

``Sizer`` has four breaks by default: an ``.item()`` feeding a size (the switches remove it,
no rule does), ``nonzero`` (the switches), a boolean mask reduced (``masked-reduction`` or
the switches, each alone) and a print (``defer-print``; the switches leave it).
``Gate`` branches on an ``.item()``: the rules make the branch a tensor select, while the
switches only move the break from the ``.item()`` to the ``if`` (a site new under them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from eqrewrite.rewriter import api
from eqrewrite.rewriter.audit.formats import render

ROOT = Path(__file__).resolve().parents[1]

SIZER = '''\
import torch
import torch.nn as nn


class Sizer(nn.Module):
    def forward(self, x: torch.Tensor):
        n = int(x.abs().sum().item()) % 3 + 1
        ones = x.new_ones(n)
        idx = torch.nonzero(x > 0)
        positive = x[x > 0].sum()
        print("rows", x.shape[0])
        return ones.sum() + idx.sum() + positive + x.sum()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 4)]
'''

GATE = '''\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x: torch.Tensor):
        total = x.sum().item()
        if total > 0:
            y = x * 2.0
        else:
            y = x * 0.5
        k = int(x.abs().max().item() * 2) + 1
        return y, torch.arange(k)


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 4)]
'''


def _project(tree: Path, gate: bool = True) -> Path:
    (tree / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tree / "models").mkdir()
    (tree / "models" / "sizer.py").write_text(SIZER)
    if gate:
        (tree / "models" / "gate.py").write_text(GATE)
    return tree


def _audit(tree: Path, *options: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "audit", "models",
                           "--no-cache", *options], cwd=tree, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> tuple[Path, dict]:
    tree = _project(tmp_path_factory.mktemp("audit-switches"))
    result = _audit(tree, "--run", "--backend", "eager", "--rules", "graphbreaks",
                    "--dynamic-sizes", "-o", "report.json")
    assert result.returncode == 1, result.stderr  # findings
    return tree, json.loads((tree / "report.json").read_text())


def _row(switches: dict, name: str) -> dict:
    return next(t for t in switches["targets"] if t["name"].endswith(name))


def _cells(counts: dict) -> tuple[int, ...]:
    """(original default, original + switches, rewritten default, rewritten + switches)."""
    return (counts["default"]["original"], counts["switches"]["original"],
            counts["default"]["rewritten"], counts["switches"]["rewritten"])


def test_breaks_in_each_cell_per_target_and_in_total(audited):
    _, document = audited
    jsonschema.Draft202012Validator(json.loads(
        (ROOT / "rewriter" / "audit" / "schema.json").read_text())).validate(document)
    assert document["settings"]["dynamo_config"] == {
        "capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}
    switches = document["dynamic"]["switches"]
    assert switches["trees"] == ["original", "rewritten"]
    assert "dynamo.capture_scalar_outputs=True" in switches["settings"]
    assert _cells(_row(switches, "Sizer")["breaks"]) == (4, 1, 2, 0)
    assert _cells(_row(switches, "Gate")["breaks"]) == (2, 1, 1, 0)
    totals = switches["totals"]
    assert _cells(totals["breaks"]) == (6, 2, 3, 0)
    assert _cells(totals["breaking"]) == (2, 2, 2, 0)
    # The default cells are the same measurements as the rest of the dynamic report.
    assert totals["breaks"]["default"]["original"] == document["dynamic"]["totals"]["breaks"]
    assert document["dynamic"]["before_after"]["totals"]["after"]["breaks"] == 3


def test_each_break_site_says_what_removes_it(audited):
    _, document = audited
    switches = document["dynamic"]["switches"]
    sites = {s["key"]: s for s in switches["sites"]}
    assert {k: s["removed_by"] for k, s in sites.items()} == {
        "GB0124@models/sizer.py:7": "switches",   # .item() feeding a size
        "GB0036@models/sizer.py:9": "switches",   # nonzero
        "GB0036@models/sizer.py:10": "either",    # x[x > 0].sum(): masked-reduction too
        "GB0059@models/sizer.py:11": "rules",     # print: defer-print
        "GB0124@models/gate.py:7": "either",      # .item() into a branch: select
        "GB0170@models/gate.py:8": "new",         # ...where the switches move its break
        "GB0124@models/gate.py:12": "switches",   # .item() feeding arange
    }
    assert _cells(sites["GB0059@models/sizer.py:11"]["count"]) == (1, 1, 0, 0)
    assert _cells(sites["GB0170@models/gate.py:8"]["count"]) == (0, 1, 0, 0)
    assert sites["GB0036@models/sizer.py:9"]["frame"]["source"] == "idx = torch.nonzero(x > 0)"
    assert switches["removed_by"] == {"rules": 1, "switches": 3, "either": 2, "together": 0,
                                      "neither": 0, "new": 1}


def test_the_rewrite_stays_exact_under_both_modes(audited):
    _, document = audited
    switches = document["dynamic"]["switches"]
    for row in switches["targets"]:
        assert row["error"] is None
        assert row["exact"] == {"default": True, "switches": True}
        for mode in ("default", "switches"):
            assert row["outputs"][mode] == {"compiled": True, "rewritten_eager": True,
                                            "rewritten_compiled": True}
    assert switches["totals"]["exact"] == {"default": 2, "switches": 2}
    assert switches["totals"]["fullgraph_ok"]["switches"]["rewritten"] == 2
    # No compiled run raised where eager did not (the split test below has one that does).
    assert switches["totals"]["raising"] == {
        "default": {"original": 0, "rewritten": 0}, "switches": {"original": 0, "rewritten": 0}}
    assert all(row["raises"]["switches"]["original"] is None for row in switches["targets"])


def test_every_format_shows_the_modes(audited):
    tree, document = audited
    text = render(document, "text", tree)
    assert "With and without capture_scalar_outputs=true, capture_dynamic_output_shape_ops" \
           "=true" in text
    assert "removed by: rules 1 · switches 3 · either 2 · together 0 · neither 0 · new 1" in text
    markdown = render(document, "md", tree)
    assert "| sizer.py::Sizer | 4 | 1 | 2 | 0 | yes / yes |" in markdown
    assert "| GB0059 at models/sizer.py:11 | `print(\"rows\", x.shape[0])` | 1 | 1 | 0 | 0 | " \
           "rules |" in markdown
    sarif = json.loads(render(document, "sarif", tree))
    jsonschema.Draft4Validator(json.loads(
        (ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())).validate(sarif)
    removed = {r["ruleId"]: r["properties"].get("removedBy")
               for r in sarif["runs"][0]["results"]}
    assert removed["print"] == ["rules"] and removed["nonzero"] == ["switches"]
    page = render(document, "html", tree)
    assert 'id="switch-sites"' in page and "renderSwitches" in page


def test_dynamo_config_without_rules_measures_the_original_in_two_modes(tmp_path):
    tree = _project(tmp_path, gate=False)
    result = _audit(tree, "--run", "--dynamo-config", "capture_scalar_outputs=true",
                    "--format", "json")
    assert result.returncode == 1, result.stderr
    switches = json.loads(result.stdout)["dynamic"]["switches"]
    assert switches["dynamo_config"] == {"capture_scalar_outputs": True}
    assert switches["trees"] == ["original"]
    row = _row(switches, "Sizer")
    assert row["breaks"] == {"default": {"original": 4}, "switches": {"original": 3}}
    assert "exact" not in row and row["outputs"]["switches"]["compiled"] is True
    assert {s["key"]: s["removed_by"] for s in switches["sites"]} == {
        "GB0124@models/sizer.py:7": "switches", "GB0036@models/sizer.py:9": "neither",
        "GB0036@models/sizer.py:10": "neither", "GB0059@models/sizer.py:11": "neither"}
    assert switches["removed_by"] == {"switches": 1, "neither": 3, "new": 0}


SPLIT = '''\
import torch
import torch.nn as nn


class Split(nn.Module):
    def forward(self, grid: torch.Tensor):
        lengths = torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0])
        x = torch.arange(int(lengths.sum()), dtype=torch.float32)
        parts = torch.split(x, lengths.tolist())
        return torch.stack([p.sum() for p in parts])


def get_inputs():
    return [torch.tensor([[1, 2, 2], [2, 1, 3]])]
'''


def test_a_compiled_run_that_raises_under_the_switches_is_a_warning(tmp_path):
    # Qwen2-VL's split by lengths.tolist(), whose length is data-dependent: by default the
    # .tolist() breaks the graph; with the switches Dynamo fails on a guard of the unbacked
    # length instead (pytorch#180596), so a program run with them stops there.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "split.py").write_text(SPLIT)
    result = _audit(tmp_path, "--run", "--backend", "eager", "--dynamic-sizes",
                    "-o", "report.json")
    assert result.returncode == 1, result.stderr
    document = json.loads((tmp_path / "report.json").read_text())
    jsonschema.Draft202012Validator(json.loads(
        (ROOT / "rewriter" / "audit" / "schema.json").read_text())).validate(document)
    switches = document["dynamic"]["switches"]
    row = _row(switches, "Split")
    assert row["raises"]["default"]["original"] is None
    assert row["raises"]["switches"]["original"].startswith("GuardOnDataDependentSymNode")
    assert switches["totals"]["raising"] == {"default": {"original": 0},
                                             "switches": {"original": 1}}
    text = render(document, "text", tmp_path)
    assert "warning: split.py::Split (original + switches): the compiled run raises " \
           "GuardOnDataDependentSymNode" in " ".join(text.split())
    assert "pytorch/pytorch/issues/180596" in text
    markdown = render(document, "md", tmp_path)
    assert "**Compiled runs that raise**" in markdown
    assert "- split.py::Split (original + switches): the compiled run raises " \
           "GuardOnDataDependentSymNode" in markdown


@pytest.mark.parametrize(("options", "message"), [
    (["--run", "--dynamo-config", "capture_scalar_output=true"],
     "unknown torch._dynamo.config switch 'capture_scalar_output' (did you mean "
     "capture_scalar_outputs"),
    (["--run", "--dynamo-config", "capture_scalar_outputs=maybe"],
     "torch._dynamo.config.capture_scalar_outputs must be true or false, got 'maybe'"),
    (["--run", "--dynamo-config", "capture_scalar_outputs"], "expected KEY=VALUE"),
    (["--dynamic-sizes"], "--dynamo-config and --dynamic-sizes need --run"),
])
def test_a_bad_switch_is_refused_before_any_target_runs(tmp_path, options, message):
    tree = _project(tmp_path, gate=False)
    result = _audit(tree, *options, timeout=300)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_the_api_takes_the_switches(tmp_path):
    tree = _project(tmp_path, gate=False)
    report = api.audit(tree / "models", cache=False, dynamo_config=api.DYNAMIC_SIZES)
    assert report.dynamo_config == dict(api.DYNAMIC_SIZES)
    assert report.document["settings"]["dynamo_config"] == dict(api.DYNAMIC_SIZES)
    texts = api.parse_switches(["capture_scalar_outputs=false"], dynamic_sizes=True)
    assert api.audit(tree / "models", cache=False, dynamo_config=texts).dynamo_config == {
        "capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": True}
    assert "dynamo_config" not in api.audit(tree / "models", cache=False).document["settings"]
    with pytest.raises(api.OptionError, match="not a torch._dynamo.config switch name"):
        api.audit(tree / "models", cache=False, dynamo_config={"no such": True})


def test_a_compiled_run_failing_as_the_originals_does_keeps_the_rewrite_exact():
    # Qwen2-VL under --dynamic-sizes: both trees' compiled runs stop on the same guard of
    # an unbacked value; the rewrite did not change that, so it stays exact in that mode.
    from eqrewrite.oracle.dynamicaudit.auditrecord import _compiled_exact
    from eqrewrite.oracle.judging.protocol import RaisedException, RunResult

    def raising(kind: str) -> RunResult:
        return RunResult(exception=RaisedException(kind, "Eq(u8, 0)", ()))

    guard = "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode"
    assert _compiled_exact(False, raising(guard), raising(guard)) is True
    assert _compiled_exact(False, raising(guard), raising("builtins.ValueError")) is False
    assert _compiled_exact(False, RunResult(), raising(guard)) is False
    assert _compiled_exact(None, None, raising(guard)) is None
    assert _compiled_exact(True, None, None) is True
