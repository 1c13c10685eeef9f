"""The oracle's formats module: finding records written and read back, folders of today's
format read as they are committed, newer formats refused, the vendored core copied, and no
torch imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from eqrewrite.oracle import formats
from eqrewrite.oracle.formats import FindingRecord, FormatError

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "findings" / "campaign-2026-11-28" / "findings"


def _record() -> FindingRecord:
    return {"class": "compiler-bug", "signature": "abc123", "verdict": "compiler-bug",
            "seeds": [3, 7], "first_seed": 3, "file": "gen_000003.py",
            "oracle": {"verdict": "compiler-bug", "findings": [
                {"verdict": "compiler-bug", "differences": [
                    {"path": "result['output']", "kind": "value", "message": "m"}]}]}}


def test_a_record_written_reads_back_the_same_with_its_format(tmp_path):
    formats.write_finding(tmp_path, _record())
    read = formats.read_finding(tmp_path)
    assert read == {"format": formats.FORMAT, **_record()}
    text = (tmp_path / formats.FINDING).read_text(encoding="utf-8")
    assert text == json.dumps(read, indent=1) + "\n"  # the layout finding.json always had
    assert next(iter(json.loads(text))) == "format"


def test_a_record_read_and_written_again_keeps_every_key_and_its_order(tmp_path):
    record = {**_record(), "rejudged": {"verdict": "compiler-bug"}}  # a key of another tool
    (tmp_path / formats.FINDING).write_text(json.dumps(record, indent=1) + "\n")
    formats.write_finding(tmp_path, formats.read_finding(tmp_path))
    again = json.loads((tmp_path / formats.FINDING).read_text())
    assert list(again) == ["format", *record] and again["rejudged"] == record["rejudged"]


def test_a_committed_folder_of_todays_format_is_read_as_format_1():
    folders = sorted(p.parent for p in CAMPAIGN.glob(f"*/{formats.FINDING}"))
    assert folders, "the committed campaign's findings are the old folders this reads"
    for folder in folders:
        raw = json.loads((folder / formats.FINDING).read_text(encoding="utf-8"))
        assert "format" not in raw  # written before the field existed
        assert formats.read_finding(folder) == raw
    record = formats.read_finding(folders[0])
    assert record["class"] in ("compiler-bug", "compile-crash") and record["seeds"]


@pytest.mark.parametrize("version", [formats.FORMAT + 1, 0, "1"])
def test_an_unknown_format_is_refused_with_a_clear_error(tmp_path, version):
    (tmp_path / formats.FINDING).write_text(json.dumps({"format": version, **_record()}))
    with pytest.raises(FormatError, match=rf"format {version!r}, but this eqrewrite reads "
                                          rf"formats 1 to {formats.FORMAT}"):
        formats.read_finding(tmp_path)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no finding.json"), ("{", "cannot read"), ('{"seeds": []}', "no 'class'"),
    ("[1]", "no 'class'")])
def test_what_is_not_a_finding_record_is_refused(tmp_path, content, message):
    if content is not None:
        (tmp_path / formats.FINDING).write_text(content)
    with pytest.raises(FormatError, match=message):
        formats.read_finding(tmp_path)


def test_the_vendored_core_is_copied_verbatim(tmp_path):
    package = formats.vendor_core(tmp_path / formats.CORE_PACKAGE)
    core = ROOT / "oracle" / "judging"
    assert sorted(p.stem for p in package.glob("*.py")) == sorted([*formats.VENDORED,
                                                                  "__init__"])
    for name in formats.VENDORED:
        assert (package / f"{name}.py").read_bytes() == (core / f"{name}.py").read_bytes()


def test_the_formats_module_imports_no_torch():
    code = ("import sys, eqrewrite.oracle.formats\n"
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
