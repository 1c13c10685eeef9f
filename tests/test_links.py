"""Symlinks and hard links stay links: targets inside the given paths are rewritten once,
links leading elsewhere are skipped with a message, hard-linked files are never split."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_cli import REWRITTEN, TENSOR_CODE, run_cli


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``src/real.py`` with two symlinks to it, and one to a file outside ``src``."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "real.py").write_text(TENSOR_CODE)
    (source / "a_link.py").symlink_to("real.py")
    (source / "z_link.py").symlink_to(source / "real.py")  # absolute
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "ext.py").write_text(TENSOR_CODE)
    (source / "ext_link.py").symlink_to("../outside/ext.py")
    return source


def _files(document: dict) -> dict[str, dict]:
    return {Path(f["path"]).name: f for f in document["files"]}


def test_symlinks_stay_links_and_the_target_is_rewritten_once(linked):
    result = run_cli(str(linked), "--format", "json")
    assert result.exit_code == 0, result.output
    assert (linked / "real.py").read_text() == REWRITTEN
    assert os.readlink(linked / "a_link.py") == "real.py"
    assert os.readlink(linked / "z_link.py") == str(linked / "real.py")
    document = json.loads(result.stdout)
    assert [Path(e["file"]).name for e in document["edits"]] == ["real.py"]
    assert document["summary"]["changed"] == 1


def test_a_link_leading_outside_the_given_paths_is_skipped_with_a_message(linked):
    result = run_cli(str(linked))
    assert result.exit_code == 0
    assert (linked.parent / "outside" / "ext.py").read_text() == TENSOR_CODE
    assert os.readlink(linked / "ext_link.py") == "../outside/ext.py"
    assert (f"skipped {linked / 'ext_link.py'}: symlink to {linked.parent / 'outside' / 'ext.py'}"
            ", outside the given paths: not followed") in result.stderr


def test_a_link_named_on_the_command_line_rewrites_its_target(linked):
    assert run_cli(str(linked / "a_link.py")).exit_code == 0
    assert (linked / "real.py").read_text() == REWRITTEN
    assert (linked / "a_link.py").is_symlink()


def test_broken_symlink_is_skipped(tmp_path):
    (tmp_path / "gone.py").symlink_to("nowhere.py")
    result = run_cli(str(tmp_path))
    assert result.exit_code == 0
    assert f"skipped {tmp_path / 'gone.py'}: broken symlink (to nowhere.py)" in result.stderr
    assert (tmp_path / "gone.py").is_symlink()


def test_hard_linked_files_are_skipped_in_place_and_never_split(tmp_path):
    first = tmp_path / "a.py"
    first.write_text(TENSOR_CODE)
    os.link(first, tmp_path / "b.py")
    inode = first.stat().st_ino
    result = run_cli(str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.output
    assert first.read_text() == TENSOR_CODE
    assert (tmp_path / "b.py").stat().st_ino == inode and first.stat().st_nlink == 2
    records = _files(json.loads(result.stdout))
    assert records["a.py"]["status"] == "skipped" and not records["a.py"]["written"]
    assert "has 2 hard links: not rewritten in place" in records["a.py"]["reason"]
    # Reporting modes still show what would change.
    assert run_cli(str(tmp_path), "--check").exit_code == 1


def test_out_tree_mirrors_links(linked, tmp_path):
    out = tmp_path / "out"
    result = run_cli(str(linked), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "real.py").read_text() == REWRITTEN and not (out / "real.py").is_symlink()
    assert os.readlink(out / "a_link.py") == "real.py"
    assert os.readlink(out / "z_link.py") == "real.py"
    assert os.readlink(out / "ext_link.py") == str(linked.parent / "outside" / "ext.py")
    assert (linked / "real.py").read_text() == TENSOR_CODE
    assert run_cli(str(linked), "--out", str(out)).exit_code == 0  # a rerun changes nothing
