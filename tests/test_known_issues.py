"""The shipped known issues (``oracle/campaign/known_issues.yaml``): each entry is a public
pytorch/pytorch issue with its state, the versions it applies to and how it was matched, and
its pattern recognises the findings of ``tests/data/campaign-2026-11-27/`` it was written for,
and no other finding of that campaign (a pattern that is too wide hides new bugs). Reads
records and programs only: no torch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eqrewrite.oracle.campaign import known
from eqrewrite.oracle.minimising.standalone import program_of

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ROOT / "tests" / "data" / "campaign-2026-11-27"
SHIPPED = known.read(known.DEFAULT_FILE)


def _findings() -> dict[str, tuple[dict, str | None]]:
    """Each finding folder of the campaign: its record and its minimal program's text."""
    found = {}
    for folder in sorted(CAMPAIGN.iterdir()):
        if not (folder / "finding.json").is_file():
            continue
        record = json.loads((folder / "finding.json").read_text(encoding="utf-8"))
        minimal = folder / "minimal.py"
        program = program_of(minimal.read_text(encoding="utf-8")) if minimal.is_file() else None
        found[folder.name] = (record, program)
    return found


FINDINGS = _findings()


def test_the_campaign_is_there():
    assert len(FINDINGS) >= 60


@pytest.mark.parametrize("issue", SHIPPED.issues, ids=lambda i: i.number)
def test_every_entry_says_what_it_is_and_how_it_was_matched(issue):
    assert issue.url.startswith("https://github.com/pytorch/pytorch/issues/")
    assert issue.number.isdigit()
    assert issue.title and issue.state in known.STATES
    assert issue.affects, "the torch versions it was seen on"
    assert issue.match in known.MATCHES and len(issue.how) > 40
    assert issue.findings or issue.reproducer, "what it was written for"
    if issue.reproducer:
        assert (ROOT / issue.reproducer).is_file()
        assert issue.number in (ROOT / issue.reproducer).read_text(encoding="utf-8")
    for name in issue.findings:
        assert name in FINDINGS, f"{name} is not a finding of the campaign"


def test_the_file_is_dated_and_has_no_duplicate_issue():
    assert SHIPPED.checked == "2026-11-28"
    numbers = [i.number for i in SHIPPED.issues]
    assert len(numbers) == len(set(numbers)) >= 14


@pytest.mark.parametrize("issue", [i for i in SHIPPED.issues if i.findings],
                         ids=lambda i: i.number)
def test_each_entry_matches_its_findings_and_no_other(issue):
    matched = sorted(name for name, (record, program) in FINDINGS.items()
                     if issue.matches(record, program))
    assert matched == sorted(issue.findings)


def test_recognise_names_the_entry_written_for_each_finding():
    expected = {name: issue.url for issue in SHIPPED.issues for name in issue.findings}
    for name, (record, program) in FINDINGS.items():
        found = known.recognise(SHIPPED.issues, record, program)
        assert (found.url if found else None) == expected.get(name), name


def test_an_entry_with_a_program_pattern_needs_the_program():
    # a campaign has no program text: a symptom-only entry must not hide its findings there
    issue = next(i for i in SHIPPED.issues if i.program is not None)
    assert issue.match == "same-symptom"
    record, program = FINDINGS[issue.findings[0]]
    assert issue.matches(record, program)
    assert not issue.matches(record)
    assert not issue.matches(record, "def program(x):\n    return x.sin_()\n")


def test_patterns_are_narrow_where_the_error_text_is_shared():
    # the same error text as the try/except findings, from an overlapping write after a
    # graph break: not the same bug
    issue = next(i for i in SHIPPED.issues if i.number == "148475")
    record, program = FINDINGS["compile-crash-c1f9c4820737"]
    assert "fake tensor call" in record["error"] and not issue.matches(record, program)
    # var_mean of an empty tensor: a mean of 0 against NaN, not any NaN near a var_mean
    empty = next(i for i in SHIPPED.issues if i.number == "197108")
    record, _ = FINDINGS["compiler-bug-f5f4d84f4c63"]
    other = {**record, "detail": record["detail"].replace("got 0 ", "got 0.5 ")}
    assert empty.matches(record) and not empty.matches(other)


@pytest.mark.parametrize(("body", "message"), [
    ("issues:\n  - {url: 'https://x/1', kinds: [a], state: fixed}\n", "'state' must be"),
    ("issues:\n  - {url: 'https://x/1', kinds: [a], match: close}\n", "'match' must be"),
    ("issues:\n  - {url: 'https://x/1', program: '('}\n", "bad 'program' pattern"),
    ("issues:\n  - {url: 'https://x/1', features: try}\n", "'features' must be a list"),
])
def test_bad_entries_are_refused(tmp_path, body, message):
    path = tmp_path / "known.yaml"
    path.write_text(body)
    with pytest.raises(known.KnownIssuesError, match=message):
        known.read(path)


def test_a_file_without_a_date_or_the_new_fields_still_loads(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text("issues:\n  - {url: 'https://x/1', ops: [sin]}\n")
    read = known.read(path)
    assert read.checked == "" and read.path == path
    assert read.issues[0].matches({"signature_ops": ["sin"]})
    assert known.read(None).issues == ()
