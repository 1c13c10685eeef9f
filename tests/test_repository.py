"""Repository invariants: lint, a torch-free rewriter, packaged packs pass their examples."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewriter.examples import check_pack, count_examples
from rewriter.rules import load_pack, packaged_packs

ROOT = Path(__file__).resolve().parents[1]


def test_rewriter_never_imports_torch():
    offenders = []
    for path in (ROOT / "rewriter").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}:{node.lineno}" for n in names
                          if n == "torch" or n.startswith("torch.")]
    assert offenders == []


@pytest.mark.parametrize("name", sorted(packaged_packs()))
def test_packaged_packs_pass_their_examples(name):
    pack = load_pack(name)
    assert count_examples(pack) > 0
    assert [f"{f.rule.id}:{f.line}: {f.message}" for f in check_pack(pack)] == []


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run([ruff, "check", "rewriter", "oracle", "rules", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_examples_rewrite_and_second_run_is_noop(tmp_path):
    out = tmp_path / "rewritten"
    first = subprocess.run([sys.executable, "-m", "rewriter", str(ROOT / "examples"), "--out",
                            str(out), "--no-cache"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "files rewritten" in first.stderr and " 0 files rewritten" not in first.stderr
    second = subprocess.run([sys.executable, "-m", "rewriter", str(out), "--check",
                             "--no-cache"], capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
