"""The dynamic audit (``eqrewrite audit --run --rules graphbreaks --what-if``) on two small
targets, run once for the module, and its HTML report in a real headless Chromium.

``Printer`` prints with ``flush=True`` inside a helper it calls twice (a print the rules do
not defer: the break stays, deduplicated into one site with count 2) and logs with a keyword
argument (not rewritten);
``Router`` branches on a tensor (``select-assign`` fixes it) and keeps a boolean-mask
selection (a dynamic shape), and declares two input sets of different shapes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from chromium import Browser, executable
from eqrewrite.rewriter.audit.formats import render

ROOT = Path(__file__).resolve().parents[1]

PRINTER = '''\
import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


def noisy(t: torch.Tensor) -> torch.Tensor:
    print("step", t.sum(), flush=True)
    return t * 2


class Printer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor):
        x = noisy(self.proj(x))
        x = noisy(x)
        logger.warning("big activations", exc_info=False)
        return x + 1


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(2, 4)]
'''

ROUTER = '''\
import torch
import torch.nn as nn


class Router(nn.Module):
    def forward(self, x: torch.Tensor):
        if x.mean() > 0:
            y = x * 2.0
        else:
            y = x * 0.5
        picked = y[y > 0]
        return y, picked * 2


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(3, 4)]


def get_input_sets():
    torch.manual_seed(1)
    return [get_inputs(), [torch.randn(5, 4)]]
'''


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> tuple[Path, dict]:
    tree = tmp_path_factory.mktemp("audit-run")
    (tree / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tree / "models").mkdir()
    (tree / "models" / "printer.py").write_text(PRINTER)
    (tree / "models" / "router.py").write_text(ROUTER)
    report = tree / "report.json"
    result = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "audit", "models",
                             "--run", "--rules", "graphbreaks", "--what-if", "--format", "json",
                             "-o", str(report)], cwd=tree, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 1, result.stderr  # findings
    assert "Graph break" not in result.stderr  # torch's own log lines stay in the workers
    return tree, json.loads(report.read_text())


def _target(document: dict, name: str) -> dict:
    return next(t for t in document["dynamic"]["targets"] if t["name"].endswith(name))


def test_report_validates_and_counts_real_breaks(audited):
    _, document = audited
    schema = json.loads((ROOT / "rewriter" / "audit" / "schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    printer, router = _target(document, "Printer"), _target(document, "Router")
    assert printer["breaks"] >= 3 and printer["fullgraph"] is False
    assert printer["outputs_equal"] is True and router["outputs_equal"] is True
    assert router["input_sets"] == 2 and router["recompilations"] >= 1
    assert router["compile_seconds"] > 0


def test_breaks_are_deduplicated_by_gb_id_and_site_and_joined_to_findings(audited):
    _, document = audited
    breaks = {b["key"]: b for b in document["dynamic"]["breaks"]}
    printed = breaks["GB0059@models/printer.py:10"]
    assert printed["count"] >= 2 and printed["targets"] == ["printer.py::Printer"]
    assert printed["frame"]["source"] == 'print("step", t.sum(), flush=True)'
    assert printed["finding"] is None  # noisy() is no rule's scope: no static finding
    branch = breaks["GB0170@models/router.py:7"]
    finding = next(f for f in document["findings"] if f["id"] == branch["finding"])
    assert finding["pattern"] == "data-dependent-branch" and finding["rule"] == "select-assign"
    assert finding["observed"]["gb_ids"] == ["GB0170"]
    assert branch["hints"] or branch["explanation"]


def test_before_after_counts_breaks_graphs_fullgraph_and_outputs(audited):
    _, document = audited
    comparison = document["dynamic"]["before_after"]
    router = next(r for r in comparison["targets"] if r["name"].endswith("Router"))
    assert router["after"]["breaks"] < router["before"]["breaks"]
    assert router["outputs_equal"] is True
    totals = comparison["totals"]
    assert totals["after"]["breaks"] < totals["before"]["breaks"]
    assert totals["outputs_equal"] == totals["targets"] == 2
    assert any(b["key"].startswith("GB0036@models/router.py:11")
               for b in comparison["remaining"])


def test_what_if_says_which_switch_removes_which_break(audited):
    _, document = audited
    what_if = document["dynamic"]["what_if"]
    assert what_if["tree"] == "rewritten"
    runs = {(r["target"].split("::")[1], r["switch"]): r for r in what_if["runs"]}
    shapes = runs[("Router", "capture_dynamic_output_shape_ops")]
    assert shapes["breaks_after"] < shapes["breaks_before"]
    assert any(k.startswith("GB0036@") for k in shapes["removed"])
    assert shapes["outputs_equal"] is True
    logger = runs[("Printer", "ignore_logger_methods")]
    assert any(k.startswith("GB0291@models/printer.py:22") for k in logger["removed"])
    assert logger["outputs_equal"] is True and logger["printed_equal"] is False  # dropped
    printing = runs[("Printer", "reorderable_logging_functions")]
    assert any(k.startswith("GB0059@models/printer.py:10") for k in printing["removed"])
    assert printing["outputs_equal"] is True and printing["printed_equal"] is not None
    assert ("Router", "ignore_logger_methods") not in runs  # no logger break there
    best = what_if["switches"][0]
    assert best["breaks_removed"] == max(s["breaks_removed"] for s in what_if["switches"])


def test_sarif_and_markdown_carry_the_measurements(audited):
    tree, document = audited
    sarif = json.loads(render(document, "sarif", tree))
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(sarif)
    observed = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "GB0059"]
    assert observed and observed[0]["locations"][0]["physicalLocation"]["region"][
        "startLine"] == 10
    markdown = render(document, "md", tree)
    assert "### Before / after `graphbreaks.yaml`" in markdown
    assert "`capture_dynamic_output_shape_ops` = true" in markdown


def test_html_report_in_headless_chromium(audited, tmp_path):
    tree, document = audited
    page = tmp_path / "report.html"
    page.write_text(render(document, "html", tree), encoding="utf-8")
    binary = executable()
    assert binary, "chromium is not installed (apt-get install chromium)"
    browser = Browser(binary)
    try:
        browser.open(page)
        total = len(document["findings"])
        assert browser.evaluate("document.getElementById('total-findings').textContent") \
            == str(total)
        assert browser.evaluate("document.getElementById('card-rule').textContent").startswith(
            str(document["summary"]["by_fix"]["rule"]))
        visible = "[...document.querySelectorAll('#findings tbody tr')]" \
                  ".filter(r => r.style.display !== 'none').length"
        assert browser.evaluate(visible) == total
        browser.evaluate("const s = document.getElementById('filter-fix'); s.value = 'rule';"
                         "s.dispatchEvent(new Event('input'))")
        by_rule = document["summary"]["by_fix"]["rule"]
        assert 0 < by_rule < total and browser.evaluate(visible) == by_rule
        assert browser.evaluate("document.getElementById('shown-count').textContent") == \
            f"{by_rule} of {total} findings shown"
        browser.evaluate("document.querySelector('#findings tbody tr').click()")
        assert browser.evaluate("document.querySelectorAll('#file-view .hit').length") >= 1
        assert browser.evaluate("document.querySelectorAll('#charts svg').length") == 4
        assert browser.evaluate("document.querySelectorAll('#what-if tbody tr').length") == \
            len(document["dynamic"]["what_if"]["runs"])
        browser.evaluate("document.querySelector('#findings th').click()")  # sort by location
        browser.screenshot(tmp_path / "report.png")
    finally:
        browser.close()
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_what_if_and_bench_need_run(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("x = 1\n"))
    result = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "audit", str(tmp_path),
                             "--what-if"], capture_output=True, text=True)
    assert result.returncode == 2 and "--what-if and --bench need --run" in result.stderr


def test_a_target_that_cannot_be_measured_fails_the_audit(tmp_path):
    (tmp_path / "dies.py").write_text(textwrap.dedent('''\
        import os

        import torch


        class Dies(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * 2


        def get_inputs():  # outside traced code: no static finding
            os._exit(3)
        '''))
    result = subprocess.run([sys.executable, "-m", "eqrewrite.rewriter", "audit", str(tmp_path),
                             "--run", "--format", "json"], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert not document["findings"]  # nothing static: the exit status is the crash's
    assert "crash" in json.dumps(document["dynamic"]["targets"])


def test_rewritten_tree_follows_calls_across_files(tmp_path):
    """--run --rules rewrites the tree as the rewrite command does: a helper in another
    file that a forward calls is in the rules' traced scope."""
    from contextlib import ExitStack

    from eqrewrite.oracle.dynamicaudit.audit import DynamicAudit
    from eqrewrite.rewriter.api import RewriteOptions, resolve_pack
    from eqrewrite.rewriter.plugins import AuditRun, Flags

    tree = tmp_path / "pkg"
    tree.mkdir()
    (tree / "__init__.py").write_text("")
    (tree / "layers.py").write_text(textwrap.dedent('''\
        import logging
        import torch
        logger = logging.getLogger(__name__)

        def attention(q: torch.Tensor) -> torch.Tensor:
            logger.warning("attention %s", q.shape)
            return q @ q.transpose(-1, -2)
        '''))
    (tree / "model.py").write_text(textwrap.dedent('''\
        import torch
        from .layers import attention

        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return attention(x)
        '''))
    files = sorted(tree.glob("*.py"))
    run = AuditRun((tree,), tmp_path, files, [str(resolve_pack("graphbreaks"))], True,
                   RewriteOptions(), {})
    with ExitStack() as stack:
        copy = DynamicAudit(run, Flags())._rewrite(stack)
        assert "_eqrw_log(__name__, 'warning'" in (copy / "layers.py").read_text()
        assert (copy / "model.py").read_text() == (tree / "model.py").read_text()
