"""benchmarks/rewrite_identity.py on tiny inputs: two checkouts of one commit print the same
rewrites; a doctored diff, a missing file or a crash is reported as a difference."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from test_hf_generality import load_benchmark

identity = load_benchmark("rewrite_identity")

ADD = "import torch\n\n\ndef f(x: torch.Tensor, y: float):\n    return x + y\n"
MUL = "import torch\n\n\ndef g(x: torch.Tensor):\n    return x * 2\n"
PLAIN = "def h(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """main() over two small fake targets, baseline and current both HEAD, default pack."""
    root = tmp_path_factory.mktemp("identity")
    for name, files in {"one": {"a.py": ADD, "plain.py": PLAIN},
                        "two": {"sub/b.py": MUL, "sub/__init__.py": ""}}.items():
        for relative, text in files.items():
            (root / name / "pkg" / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / name / "pkg" / relative).write_text(text)
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    process = subprocess.run(
        [sys.executable, str(identity.__file__),
         "--baseline", "HEAD", "--current", "HEAD", "--pack", "default", "--safe-only", "-j", "1",
         "--target", f"one={root / 'one' / 'pkg'}", "--target", f"two={root / 'two' / 'pkg'}",
         "--worktree", str(root / "base"), "--current-worktree", str(root / "current"),
         "--save", str(root / "saved")], capture_output=True, text=True, timeout=120)
    assert {p: p.read_bytes() for p in before} == before  # the targets are only read
    return root, process


def test_two_checkouts_of_one_commit_are_identical(run):
    root, process = run
    assert process.returncode == 0, process.stdout + process.stderr
    rows = [line for line in process.stdout.splitlines() if line.startswith(("| one", "| two"))]
    assert [row.split("| yes |")[0] for row in rows] == [  # then the times
        "| one | default | 2 | 1 | 1 | 168 ", "| two | default | 2 | 1 | 1 | 166 "]
    # Each side imported its own checkout; the checkouts made for the run are gone again.
    assert f"eqrewrite.rewriter from {(root / 'base').resolve()}/rewriter/" in process.stderr
    assert f"eqrewrite.rewriter from {(root / 'current').resolve()}/rewriter/" in process.stderr
    assert not (root / "base").exists() and not (root / "current").exists()
    diff = (root / "saved" / "one-default.current.diff").read_text()
    assert diff.startswith("--- <corpus>/pkg/a.py\t(original)\n")  # the copy, not a path
    assert "+    return torch.add(x, y)\n" in diff


def _outputs(root: Path, stem: str) -> tuple:
    saved = root / "saved"
    return tuple(identity.Output((saved / f"{stem}.{side}.diff").read_bytes(),
                                 (saved / f"{stem}.{side}.report").read_text(), 1)
                 for side in ("baseline", "current"))


def test_a_doctored_diff_is_reported_with_its_file_and_lines(run):
    root, _ = run
    baseline, current = _outputs(root, "one-default")
    assert identity.compare(baseline, current).identical
    doctored = dataclasses.replace(current, diff=current.diff.replace(b"torch.add", b"torch.sub"))
    verdict = identity.compare(baseline, doctored)
    assert not verdict.identical and verdict.what == ["diff"]
    assert verdict.first_file == "<corpus>/pkg/a.py"
    assert "-+    return torch.add(x, y)\n++    return torch.sub(x, y)\n" in verdict.detail


def test_a_file_on_one_side_only_a_report_line_and_a_crash_differ(run):
    root, _ = run
    baseline, current = _outputs(root, "one-default")
    empty = dataclasses.replace(current, diff=b"", status=0)
    verdict = identity.compare(baseline, empty)
    assert verdict.what == ["diff", "exit status"]
    assert verdict.first_file == "<corpus>/pkg/a.py"
    assert "\n-+    return torch.add(x, y)\n" in verdict.detail
    renamed = dataclasses.replace(current, report=current.report.replace("1 edit", "2 edits"))
    assert identity.compare(baseline, renamed).what == ["report"]
    crashed = dataclasses.replace(current, diff=b"", report="Traceback (most recent call last):\n"
                                  "  File x\nImportError: cannot import name 'X'\n")
    verdict = identity.compare(baseline, crashed)
    assert "current crashed" in verdict.detail and "ImportError" in verdict.detail


def test_split_diff_and_placeholders():
    text = ("--- /t/x.py\t(original)\n+++ /t/x.py\t(rewritten)\n@@ -1 +1 @@\n--- a\n+b\n"
            "--- /t/y.py\t(original)\n+++ /t/y.py\t(rewritten)\n@@ -1 +1 @@\n-c\n+d\n")
    chunks = identity.split_diff(text)
    assert list(chunks) == ["/t/x.py", "/t/y.py"] and "".join(chunks.values()) == text
    assert chunks["/t/x.py"].endswith("--- a\n+b\n")  # a removed '-- a' line is no header
    assert identity.placeholders("/tmp/c/x /tmp/c2", [("/tmp/c", "<c>"), ("/tmp/c2", "<d>")]
                                 ) == "<c>/x <d>"


def test_the_plan_runs_each_pack_alone_and_unsafe_where_it_has_unsafe_rules():
    assert [j.label for j in identity.plan({"a": True}, {"a": True}, safe_only=True)] == ["a"]
    jobs = identity.plan({"default": True, "old": False}, {"default": True, "new": True})
    assert [(j.label, j.note) for j in jobs] == [
        ("default", ""), ("default --unsafe", ""), ("new", "only in current"),
        ("new --unsafe", "only in current"), ("old", "only in baseline")]
    assert jobs[1].arguments(2) == ["--rules", "default", "--diff", "--no-cache", "-j", "2",
                                    "--unsafe"]
    shipped = identity.shipped_packs(identity.ROOT)
    assert {"default", "graphbreaks", "equivalences"} <= set(shipped) and shipped["default"]
