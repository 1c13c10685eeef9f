"""A campaign's folder: the journal that makes it resumable, finding folders, the summary.

```
campaign/
  campaign.json     what was asked (settings, generator, rules): a resume must ask the same
  journal.jsonl     one line per finished seed, appended and flushed to disk before the next
  summary.json      counts by class, findings by signature, throughput (rewritten atomically)
  findings/<class>-<signature>/
      finding.json  the class, signature, seeds, ops, the oracle's record, settings (the
                    campaign's, and compile_settings: the program's header over them), torch
      program.py    the first program that showed it; rewritten.py when the rewrite changed it
      tree/         the program as the reproducer runs it (the tree where it diverged)
      repro_<name>/ the oracle's reproducer folder (eager vs compiled findings): repro.py
                    exits 1 while the verdict is the finding's (compiler-bug, or
                    compile-error for a compile crash); ``eqrewrite reduce`` works on it
  excused/<rule>-<signature>/
      finding.json, program.py   a program the semantics triage excused (undefined or
                    unsupported behaviour, warnings only): no reproducer, no report
  work/             the local jobs' folders (current program and rewrite)
```

A seed is journaled only after its finding folder is complete, so after an interruption the
journal's seeds are exactly the finished ones and the rest are run again. Finding folders
are built under a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from .. import formats
from ..formats import CampaignContext, CampaignMeta, FindingRecord, write_json
from . import outcome
from .outcome import SeedResult

JOURNAL, SUMMARY, META, FINDINGS = "journal.jsonl", "summary.json", "campaign.json", "findings"
EXCUSED = "excused"
# What the journal keeps of a result (sources, records and requests go to finding folders).
JOURNALED = ("seed", "class", "verdict", "rule", "signature", "known", "confidence", "seconds",
             "ops",
             "features", "focus", "edits", "kinds", "signature_ops", "error", "pid", "attempts",
             "at")


class CampaignError(RuntimeError):
    """A campaign folder that cannot be used as asked (the message says why)."""


def open_campaign(out: Path, meta: CampaignMeta, resume: bool) -> list[SeedResult]:
    """Prepare ``out``; return the journal's finished results. An existing campaign is
    resumed only with the same settings (``meta``); without ``resume`` it must be empty."""
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / META
    if meta_path.exists():
        previous = json.loads(meta_path.read_text(encoding="utf-8"))
        if not resume:
            raise CampaignError(f"{out}: holds a campaign already; pass --resume to continue "
                                "it or choose another folder")
        changed = sorted(k for k in set(previous) | set(meta)
                         if k != "seeds" and previous.get(k) != meta.get(k))
        if changed:
            raise CampaignError(f"{out}: the campaign there was run with other settings "
                                f"({', '.join(changed)} differ); resume it with the same ones")
    write_json(meta_path, meta)
    return read_journal(out / JOURNAL)


def read_journal(path: Path) -> list[SeedResult]:
    """Finished results; a last line cut short by an interruption is ignored."""
    if not path.exists():
        return []
    results: list[SeedResult] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            results.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return results


class Journal:
    """Append-only: one JSON line per finished seed, on disk before ``append`` returns."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open)

    def append(self, result: SeedResult) -> None:
        plain: Mapping[str, object] = result
        line = json.dumps({k: plain[k] for k in JOURNALED if k in plain})
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def finding_name(result: SeedResult) -> str:
    """The folder name of a result's finding: its class (an excused one's rule) and
    signature."""
    first = result["rule"] if result["class"] == outcome.EXCUSED else result["class"]
    return f"{first}-{result['signature']}"


def finding_folder(out: Path, result: SeedResult) -> Path:
    """Where a result's finding folder is: ``findings/``, or ``excused/`` for a program the
    semantics triage excused."""
    parent = EXCUSED if result["class"] == outcome.EXCUSED else FINDINGS
    return out / parent / finding_name(result)


def write_finding(out: Path, result: SeedResult, context: CampaignContext) -> Path:
    """The folder of a new finding (first seed showing it), complete before it appears."""
    final = finding_folder(out, result)
    if final.exists():  # written before an interruption, journal line lost: keep it
        add_seed(final, result["seed"])
        return final
    building = final.parent / f".building-{finding_name(result)}-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    (building / formats.PROGRAM).write_text(result["program"], encoding="utf-8")
    if rewritten := result.get("rewritten"):
        (building / formats.REWRITTEN).write_text(rewritten, encoding="utf-8")
    reproducer = None
    if result.get("request") is not None:
        reproducer = _reproducer(building, final, result)
    # The campaign's result (plain JSON) becomes the format's record here.
    record = cast(FindingRecord, {key: result.get(key) for key in (
        "class", "signature", "verdict", "rule", "confidence", "detail", "tree", "kinds",
        "signature_ops", "error", "ops", "features", "focus", "edits")})
    record.update({"seeds": [result["seed"]], "first_seed": result["seed"],
                   "file": result.get("file"), "reproducer": reproducer,
                   "regenerate": context.get("regenerate"), "torch": context.get("torch"),
                   "settings": context.get("settings"),
                   "compile_settings": result.get("compile_settings"),
                   "oracle": result.get("record")})
    formats.write_finding(building, record)
    os.replace(building, final)
    return final


def _reproducer(building: Path, final: Path, result: SeedResult) -> str:
    """The oracle's reproducer folder, replaying the program kept in ``tree/`` (its path as
    it will be once the folder is renamed into place)."""
    from ..harness.repro import FAILING_VERDICTS, write_reproducer

    tree = building / formats.TREE
    tree.mkdir()
    rewritten = result.get("rewritten")
    source = rewritten if result.get("tree") == "rewritten" and rewritten else result["program"]
    (tree / result["file"]).write_text(source, encoding="utf-8")
    # A compile crash's reproducer exits 1 while compiling raises (a crashed worker has no
    # such verdict: its reproducer is the eager-vs-compiled one, as before).
    verdict = result.get("verdict")
    verdict = verdict if verdict is not None and verdict in FAILING_VERDICTS else "compiler-bug"
    script = write_reproducer(building, final / formats.TREE, result["request"], result["compare"],
                              verdict)
    return script.parent.name


def add_seed(folder: Path, seed: int) -> None:
    """Record another seed that showed an existing finding."""
    record = formats.read_finding(folder)
    if seed not in record["seeds"]:
        record["seeds"] = sorted(record["seeds"] + [seed])
        formats.write_finding(folder, record)
