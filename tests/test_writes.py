"""Writing user files: permissions, modes, failed writes, links, output trees.

These run as whatever user the suite runs as (root in CI containers): read-only files are
refused by their mode bits, so the results are the same for root and for everyone else.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.workspace import files
from test_cli import CLEAN_CODE, REWRITTEN, TENSOR_CODE, run_cli


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(files.TEMPORARY_SUFFIX)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``src/`` holding a file to rewrite (``model.py``), another (``other.py``), a clean one."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "model.py").write_text(TENSOR_CODE)
    (source / "other.py").write_text(TENSOR_CODE)
    (source / "clean.py").write_text(CLEAN_CODE)
    return source


# -- item 2: read-only files and modes ----------------------------------------------------


def test_read_only_file_is_that_files_error_and_stays_untouched(tree):
    model = tree / "model.py"
    model.chmod(0o444)
    result = run_cli(str(tree))
    assert result.exit_code == 123, result.output
    assert f"error: {model}: cannot write: Permission denied" in result.stderr
    assert model.read_text() == TENSOR_CODE and _mode(model) == 0o444
    assert (tree / "other.py").read_text() == REWRITTEN  # the others still are rewritten


def test_rewrite_in_place_keeps_the_files_mode(tree):
    model = tree / "model.py"
    model.chmod(0o754)
    assert run_cli(str(tree)).exit_code == 0
    assert model.read_text() == REWRITTEN and _mode(model) == 0o754


def test_check_and_diff_accept_read_only_files(tree):
    (tree / "model.py").chmod(0o444)
    assert run_cli(str(tree), "--check").exit_code == 1
    assert run_cli(str(tree), "--diff").exit_code == 1


# -- item 3: any failed write is that file's error ----------------------------------------


def test_read_only_folder_is_each_files_error(tree):
    tree.chmod(0o555)
    try:
        result = run_cli(str(tree), "--format", "json")
    finally:
        tree.chmod(0o755)
    assert result.exit_code == 123, result.output
    errors = {Path(e["file"]).name: e["message"] for e in json.loads(result.stdout)["errors"]}
    assert errors == {"model.py": "cannot write: Permission denied",
                      "other.py": "cannot write: Permission denied"}
    assert (tree / "model.py").read_text() == TENSOR_CODE


def test_full_disk_is_that_files_error_and_leaves_no_temporary(tree, monkeypatch):
    real_fsync = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(".model.py."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    result = run_cli(str(tree))
    assert result.exit_code == 123, result.output
    assert f"error: {tree / 'model.py'}: cannot write: No space left on device" in result.stderr
    assert (tree / "model.py").read_text() == TENSOR_CODE
    assert (tree / "other.py").read_text() == REWRITTEN
    assert _temporaries(tree) == []


def test_immutable_file_is_that_files_error(tree, monkeypatch):
    # chattr +i needs a capability containers rarely have; the rename fails the same way.
    real_replace = os.replace

    def replace(source, target):
        if Path(target).name == "model.py":
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", replace)
    result = run_cli(str(tree))
    assert result.exit_code == 123
    assert f"error: {tree / 'model.py'}: cannot write: Operation not permitted" in result.stderr
    assert (tree / "other.py").read_text() == REWRITTEN
    assert _temporaries(tree) == []


def test_out_file_that_is_a_folder_is_that_files_error(tree, tmp_path):
    out = tmp_path / "out"
    (out / "model.py").mkdir(parents=True)
    result = run_cli(str(tree), "--out", str(out))
    assert result.exit_code == 123, result.output
    assert (f"error: {tree / 'model.py'}: cannot write {out / 'model.py'}: Is a directory"
            in result.stderr)
    assert (out / "other.py").read_text() == REWRITTEN
    assert (out / "clean.py").read_text() == CLEAN_CODE


def test_out_copy_of_a_bad_file_that_fails_is_reported_with_the_files_error(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "bad.py").write_text("def (:\n")
    out = tmp_path / "out"
    (out / "bad.py").mkdir(parents=True)
    result = run_cli(str(source), "--out", str(out))
    assert result.exit_code == 123
    assert "syntax error" in result.stderr and f"cannot write {out / 'bad.py'}" in result.stderr


def test_parallel_workers_report_failed_writes_too(tmp_path):
    for i in range(20):
        (tmp_path / f"m{i}.py").write_text(TENSOR_CODE)
    (tmp_path / "m3.py").chmod(0o444)
    result = run_cli(str(tmp_path), "-j", "2", "--format", "json")
    document = json.loads(result.stdout)
    assert result.exit_code == 123
    assert [Path(e["file"]).name for e in document["errors"]] == ["m3.py"]
    assert document["summary"]["changed"] == 19


def test_write_atomic_gives_new_files_the_requested_mode(tmp_path):
    files.write_atomic(tmp_path / "a.py", b"x = 1\n", 0o640)
    assert _mode(tmp_path / "a.py") == 0o640
    files.write_atomic(tmp_path / "b.py", b"x = 1\n")
    assert _mode(tmp_path / "b.py") == files.default_mode()


def test_cli_result_for_unknown_write_failure_names_the_file(tree, monkeypatch):
    def broken(*_args, **_kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(files.tempfile, "mkstemp", broken)
    from click.testing import CliRunner

    result = CliRunner().invoke(main, [str(tree / "model.py"), "--no-cache"])
    assert result.exit_code == 123
    assert result.stderr.startswith(f"error: {tree / 'model.py'}: cannot write: Input/output")


def test_write_atomic_writes_through_symlinks_and_refuses_hard_links(tmp_path):
    (tmp_path / "real.py").write_text("old\n")
    (tmp_path / "link.py").symlink_to("real.py")
    files.write_atomic(tmp_path / "link.py", b"new\n")
    assert (tmp_path / "link.py").is_symlink() and (tmp_path / "real.py").read_text() == "new\n"
    os.link(tmp_path / "real.py", tmp_path / "other.py")
    with pytest.raises(files.LinkedFileError, match="has 2 hard links"):
        files.write_atomic(tmp_path / "real.py", b"newer\n")
    assert (tmp_path / "other.py").read_text() == "new\n" and _temporaries(tmp_path) == []

