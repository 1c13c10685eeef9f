"""The caches never serve a stale result: per-file outcomes, call-graph summaries, audits.

A file's cached outcome depends on its bytes and on the facts other files decide (whether
its functions are traced): a file whose callers change is processed again even though its
own bytes did not, and its notes come back from the cache as they would from a run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from eqrewrite.rewriter.audit import scan
from eqrewrite.rewriter.cli import main
from eqrewrite.rewriter.running import cache as cache_module
from eqrewrite.rewriter.running import runner
from eqrewrite.rewriter.running.summaries import SummaryStore

UTIL = '''import torch


def helper(scores: torch.Tensor, flags: torch.Tensor):
    print(scores)
    if scores.max() > 3:
        return None
    return scores
'''
CALLING = '''import torch

from .util import helper


class Model(torch.nn.Module):
    def forward(self, x):
        return helper(x, x)
'''
NOT_CALLING = CALLING.replace("return helper(x, x)", "return x")
NOTE = "select-assign"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """``pkg/`` whose ``model.py`` calls ``util.helper`` from a forward (so it is traced)."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "util.py").write_text(UTIL)
    (folder / "model.py").write_text(NOT_CALLING)
    return folder


@pytest.fixture
def processed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the runner really processes (not answered from the cache)."""
    seen: list[str] = []
    original = runner._process

    def counting(context, path, destination):  # type: ignore[no-untyped-def]
        seen.append(Path(path).name)
        return original(context, path, destination)

    monkeypatch.setattr(runner, "_process", counting)
    return seen


def check(paths: list[Path], cache: Path, *extra: str) -> dict:
    """``eqrewrite PATHS --rules graphbreaks --check --format json`` with ``cache``."""
    result = CliRunner().invoke(main, [*map(str, paths), "--rules", "graphbreaks", "--check",
                                       "--format", "json", "-j", "1", "--cache-dir",
                                       str(cache), *extra])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def util_outcome(document: dict) -> tuple[str, list[str], list[str]]:
    """util.py's status, the rules of its edits and of its notes."""
    [record] = [f for f in document["files"] if f["path"].endswith("util.py")]
    edits = [e["rule"] for e in document["edits"] if e["file"].endswith("util.py")]
    notes = [n["rule"] for n in document["notes"] if n["file"].endswith("util.py")]
    return record["status"], edits, notes


def test_a_file_whose_callers_change_is_rewritten_though_its_bytes_did_not(
        package: Path, tmp_path: Path, processed: list[str]) -> None:
    cache = tmp_path / "cache"
    assert util_outcome(check([package], cache)) == ("unchanged", [], [])
    processed.clear()
    assert util_outcome(check([package], cache)) == ("unchanged", [], [])
    assert processed == []  # nothing changed: everything from the cache
    (package / "model.py").write_text(CALLING)  # util.helper becomes traced
    assert util_outcome(check([package], cache)) == ("changed", ["defer-print"], [NOTE])
    assert sorted(processed) == ["model.py", "util.py"]
    processed.clear()
    # Served from the cache, notes included, as the uncached run reports them.
    assert util_outcome(check([package], cache)) == ("changed", ["defer-print"], [NOTE])
    assert processed == []
    (package / "model.py").write_text(NOT_CALLING)  # and stops being traced
    assert util_outcome(check([package], cache)) == ("unchanged", [], [])
    assert sorted(processed) == ["model.py", "util.py"]


def test_notes_come_back_from_the_cache(package: Path, tmp_path: Path,
                                        processed: list[str]) -> None:
    (package / "util.py").write_text(UTIL.replace("    print(scores)\n", ""))
    (package / "model.py").write_text(CALLING)
    cache = tmp_path / "cache"
    first = check([package], cache)
    processed.clear()
    second = check([package], cache)
    assert processed == [] and util_outcome(second) == ("unchanged", [], [NOTE])
    assert second["notes"] == first["notes"]


def test_a_hook_given_one_file_follows_calls_through_its_package(
        package: Path, tmp_path: Path) -> None:
    (package / "model.py").write_text(CALLING)
    cache = tmp_path / "cache"
    document = check([package / "util.py"], cache)
    assert [f["path"] for f in document["files"]] == [str(package / "util.py")]
    assert util_outcome(document) == ("changed", ["defer-print"], [NOTE])
    # The caller, outside the given files, changes: the given file's facts do.
    (package / "model.py").write_text(NOT_CALLING)
    assert util_outcome(check([package / "util.py"], cache)) == ("unchanged", [], [])


def test_a_file_changed_within_its_mtime_tick_is_not_served_stale(
        package: Path, tmp_path: Path, processed: list[str]) -> None:
    cache = tmp_path / "cache"
    (package / "model.py").write_text(CALLING)
    check([package], cache)
    util = package / "util.py"
    before = util.stat()
    util.write_text(UTIL.replace("print(scores)", "print(-flags)"))  # same size
    os.utime(util, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert util.stat().st_size == before.st_size  # the stat cannot tell
    processed.clear()
    document = check([package], cache)
    assert processed == ["util.py"]
    [edit] = [e for e in document["edits"] if e["file"].endswith("util.py")]
    assert "flags" in edit["after"]


def test_a_touched_file_is_not_processed_again(package: Path, tmp_path: Path,
                                               processed: list[str]) -> None:
    cache = tmp_path / "cache"
    check([package], cache)
    os.utime(package / "util.py", ns=(1_000_000_000, 1_000_000_000))
    processed.clear()
    check([package], cache)
    assert processed == []


def test_a_pack_change_invalidates_the_outcomes(package: Path, tmp_path: Path,
                                                processed: list[str]) -> None:
    pack = tmp_path / "pack.yaml"
    pack.write_text(Path(cache_module.packaged_packs()["graphbreaks.yaml"]).read_text())
    cache = tmp_path / "cache"
    check([package], cache, "--rules", str(pack))
    processed.clear()
    check([package], cache, "--rules", str(pack))
    assert processed == []
    pack.write_text(pack.read_text() + "\n# edited\n")
    check([package], cache, "--rules", str(pack))
    assert sorted(processed) == ["__init__.py", "model.py", "util.py"]


def test_a_damaged_cache_is_a_miss(package: Path, tmp_path: Path,
                                   processed: list[str]) -> None:
    cache = tmp_path / "cache"
    first = check([package], cache)
    for path in cache.glob("*-*.*"):
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    processed.clear()
    assert check([package], cache)["files"] == first["files"]
    assert sorted(processed) == ["__init__.py", "model.py", "util.py"]


# -- the summary store ---------------------------------------------------------------------


def traced(store: SummaryStore, package: Path) -> dict[str, frozenset[str]]:
    """The store's traced scope over the package, by file name."""
    paths = sorted(str(p) for p in package.glob("*.py"))
    return {Path(p).name: names for p, names in store.traced(paths, jobs=1).items()}


def test_a_changed_file_is_summarised_alone(package: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    assert "util.py" not in traced(SummaryStore(folder), package)
    store = SummaryStore(folder)
    assert "util.py" not in traced(store, package)
    assert store.summarised == []
    (package / "model.py").write_text(CALLING)
    store = SummaryStore(folder)
    assert traced(store, package)["util.py"] == {"helper"}
    assert [Path(p).name for p in store.summarised] == ["model.py"]
    # A comment changes no summary: the stored scope answers without a solve.
    (package / "model.py").write_text(CALLING + "# a comment\n")
    store = SummaryStore(folder)
    assert traced(store, package)["util.py"] == {"helper"}
    assert [Path(p).name for p in store.summarised] == ["model.py"]


def test_a_lost_summary_is_summarised_again(package: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    traced(SummaryStore(folder), package)
    for bodies in folder.glob("callgraph-*.marshal"):
        bodies.write_bytes(b"damaged")
    (package / "model.py").write_text(CALLING)
    store = SummaryStore(folder)
    assert traced(store, package)["util.py"] == {"helper"}
    assert sorted(Path(p).name for p in store.summarised) == [
        "__init__.py", "model.py", "util.py"]


def test_a_new_build_does_not_read_the_old_summaries(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    traced(SummaryStore(folder), package)
    monkeypatch.setattr(cache_module, "__version__", "0.0.0-other")
    cache_module.tool_digest.cache_clear()
    try:
        store = SummaryStore(folder)
        traced(store, package)
        assert len(store.summarised) == 3
    finally:
        monkeypatch.undo()
        cache_module.tool_digest.cache_clear()


# -- the audit -----------------------------------------------------------------------------


def audit(paths: list[Path], cache: Path) -> dict:
    """``eqrewrite audit PATHS --scope traced --format json`` with ``cache``."""
    result = CliRunner().invoke(main, ["audit", *map(str, paths), "--scope", "traced",
                                       "--format", "json", "-j", "1", "--exit-zero",
                                       "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_audit_answers_from_its_cache_and_follows_the_facts(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    audited: list[str] = []
    original = scan.audit_file

    def counting(context, path, label):  # type: ignore[no-untyped-def]
        audited.append(Path(path).name)
        return original(context, path, label)

    monkeypatch.setattr(scan, "audit_file", counting)
    cache = tmp_path / "cache"

    def util_findings(document: dict) -> list[str]:
        return [f["pattern"] for f in document["findings"] if f["file"].endswith("util.py")]

    assert util_findings(audit([package], cache)) == []
    audited.clear()
    assert util_findings(audit([package], cache)) == []
    assert audited == []
    (package / "model.py").write_text(CALLING)
    found = util_findings(audit([package], cache))
    assert "print" in found and sorted(audited) == ["model.py", "util.py"]
    audited.clear()
    assert util_findings(audit([package], cache)) == found and audited == []


def test_a_file_no_rule_concerns_is_parsed_once_and_its_syntax_errors_still_show(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The call graph parses every file for its summary; a file that no rule concerns is not
    parsed again for its syntax errors when its content is the one summarised, and one that
    does not parse (no summary) still reports its error, with its line; so does one that
    parses as the call graph reads it (UTF-8) but not in its declared encoding."""
    (package / "plain.py").write_text("VALUE = 1\n")
    (package / "broken.py").write_text("VALUE = (\n")
    # UTF-8 bytes under a latin-1 declaration: the call graph (UTF-8) parses them, Python
    # does not (``é`` reads as ``Ã©``, and ``©`` is no identifier character).
    (package / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nn\xc3\xa9 = 1\n")
    parsed: list[str] = []
    original = runner.parse

    def counting(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return original(text)

    monkeypatch.setattr(runner, "parse", counting)
    result = CliRunner().invoke(main, [str(package), "--rules", "graphbreaks", "--check",
                                       "--format", "json", "-j", "1", "--no-cache"])
    assert result.exit_code == 123, result.output  # a file could not be processed
    document = json.loads(result.stdout)
    assert "VALUE = 1\n" not in parsed and "VALUE = (\n" in parsed
    errors = {Path(e["file"]).name: e for e in document["errors"]}
    assert "syntax error" in errors["broken.py"]["message"] and errors["broken.py"]["line"] == 1
    assert "syntax error" in errors["latin.py"]["message"] and errors["latin.py"]["line"] == 2


def test_a_file_that_only_mentions_forward_is_not_parsed_again(
        package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The call graph traces every `forward` method it parsed: a file with no traced
    function has none, whatever its text says, so the forward-scoped rules skip it (a third
    of transformers' files that mention the word); a file with one is still rewritten."""
    (package / "doc.py").write_text('"""Call forward() on the model."""\n\n\n'
                                    "def g(x):\n    print(x)\n    return x\n")
    rewritten: list[str] = []
    original = runner.rewrite_source

    def counting(text: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        rewritten.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(runner, "rewrite_source", counting)
    result = CliRunner().invoke(main, [str(package), "--rules", "graphbreaks", "--check",
                                       "--format", "json", "-j", "1", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert NOT_CALLING in rewritten  # its forward is traced: matched
    assert not any("forward()" in text for text in rewritten)
    # The same file given with a forward method is matched, and its print deferred.
    (package / "doc.py").write_text('"""Call forward() on the model."""\nimport torch\n\n\n'
                                    "class M(torch.nn.Module):\n    def forward(self, x):\n"
                                    "        print(x)\n        return x\n")
    result = CliRunner().invoke(main, [str(package), "--rules", "graphbreaks", "--check",
                                       "--format", "json", "-j", "1", "--no-cache"])
    assert result.exit_code == 1, result.output
    edits = json.loads(result.stdout)["edits"]
    assert any(e["file"].endswith("doc.py") and e["rule"] == "defer-print" for e in edits)


# -- pruning ---------------------------------------------------------------------------------


def _age(paths: list[Path], days: float) -> None:
    then = cache_module.time.time() - days * cache_module.DAY
    for path in paths:
        os.utime(path, (then, then))


@pytest.mark.parametrize("command", ["rewrite", "audit"])
def test_a_run_removes_cache_files_unused_for_a_month_and_keeps_its_own(
        package: Path, tmp_path: Path, command: str) -> None:
    cache = tmp_path / "cache"
    run = check if command == "rewrite" else audit
    run([package], cache)
    own = sorted(p for p in cache.iterdir() if p.name.startswith(("cache-", "audit-",
                                                                   "callgraph-")))
    assert own  # what this run used: its outcomes, the call graph's index and summaries
    stale = [cache / "cache-0123456789abcdef0123.json", cache / "audit-00aa.json",
             cache / "callgraph-00bb.marshal"]
    kept = [cache / "notes.txt", cache / "callgraph-00cc.json"]  # not ours; used lately
    for path in stale + kept:
        path.write_text("{}")
    _age(stale + own + [kept[0]], cache_module.UNUSED_DAYS + 1)
    _age([kept[1]], cache_module.UNUSED_DAYS - 1)
    _age([cache / "pruned"], 2)  # the first run pruned (nothing) two days ago
    run([package], cache)  # uses (writes or touches) its own files, then prunes
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in own + kept)
    (cache / "cache-0123456789abcdef0123.json").write_text("{}")
    _age([cache / "cache-0123456789abcdef0123.json"], cache_module.UNUSED_DAYS + 1)
    run([package], cache)  # pruned less than a day ago: not again
    assert (cache / "cache-0123456789abcdef0123.json").exists()


def test_the_summary_index_forgets_files_that_no_longer_exist(
        package: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    other = tmp_path / "other"
    other.mkdir()
    (other / "__init__.py").write_text("")
    (other / "gone.py").write_text("def f():\n    return 1\n")
    traced(SummaryStore(folder), other)
    traced(SummaryStore(folder), package)
    assert str(other / "gone.py") in SummaryStore(folder).records  # another tree: kept
    (other / "gone.py").unlink()
    (package / "util.py").write_text(UTIL + "\n\ndef more():\n    return 2\n")
    traced(SummaryStore(folder), package)  # a change: the index is saved again
    records = SummaryStore(folder).records
    assert str(other / "gone.py") not in records and str(other / "__init__.py") in records


def test_a_run_that_changes_nothing_only_marks_the_cache_used(
        package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    check([package], cache)
    [outcomes] = cache.glob("cache-*.json")
    _age([outcomes], 2)
    written = outcomes.stat()
    check([package], cache)  # every file from the cache
    assert outcomes.stat().st_ino == written.st_ino  # not replaced (a write is atomic)
    assert outcomes.stat().st_mtime > written.st_mtime  # but used now
    (package / "model.py").write_text(CALLING)
    check([package], cache)
    assert outcomes.stat().st_ino != written.st_ino  # new outcomes: written


def test_pruning_makes_no_cache_folder(tmp_path: Path) -> None:
    folder = tmp_path / ".eqrewrite_cache"
    assert cache_module.prune(folder) == 0
    assert not folder.exists()  # (it would show in `git status`, without its .gitignore)
