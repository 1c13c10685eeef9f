"""A campaign keeps what the semantics triage excused apart from its findings, and merges
findings of one root cause when its seeds are done (canned results: no program runs)."""

from __future__ import annotations

import json

from eqrewrite.oracle.campaign import outcome, store
from eqrewrite.oracle.campaign.rootcause import ROOT_CAUSES
from eqrewrite.oracle.campaign.runner import Campaign, Runner


class Canned:
    """An executor that answers each seed from a table, in this process."""

    name, jobs = "canned", 1

    def __init__(self, answers):
        self.answers, self.queue = answers, []

    def submit(self, seed):
        self.queue.append(seed)

    def finished(self, timeout):
        done, self.queue = self.queue[:1], self.queue[1:]
        return [(seed, dict(self.answers[seed], seed=seed)) for seed in done]

    @property
    def in_flight(self):
        return len(self.queue)

    def close(self, cancel=False):
        pass


CRASH = {"class": "compile-crash", "verdict": "compile-error", "kinds": [], "file": "gen.py",
         "detail": "original compiled raised where eager did not: BackendCompilerFailed: "
                   "backend='inductor' raised: RuntimeError: no kernel for layout 3"}
OVERLAP = {"class": "excused", "verdict": "unsupported", "rule": "overlapping-write",
           "kinds": ["output/exact"], "signature_ops": ["index_put"], "error": "",
           "program": "import torch\n", "file": "gen.py",
           "detail": "original compiled differs from eager (overlapping-write: ...)"}


def run(tmp_path, answers):
    out = tmp_path / "campaign"
    finished = store.open_campaign(out, {"settings": {}}, resume=True)
    campaign = Campaign(sorted(answers), out, Canned(answers), {"torch": "x"}, [], None,
                        progress=False)
    return Runner(campaign, finished).run(), out


def test_excused_programs_are_counted_by_rule_and_kept_apart(tmp_path):
    warned = {**OVERLAP, "verdict": "warning-only", "rule": "warning-only",
              "kinds": ["printed/structure"]}
    summary, out = run(tmp_path, {0: OVERLAP, 1: OVERLAP, 2: warned})
    assert outcome.classify("undefined-behaviour", "") == outcome.EXCUSED
    assert summary["excused"] == {"overlapping-write": 2, "warning-only": 1}
    assert summary["findings"] == [] and not (out / store.FINDINGS).exists()
    folders = sorted(p.name for p in (out / store.EXCUSED).iterdir())
    assert len(folders) == 2 and folders[0].startswith("overlapping-write-")
    record = json.loads((out / store.EXCUSED / folders[0] / "finding.json").read_text())
    assert record["rule"] == "overlapping-write" and record["seeds"] == [0, 1]
    assert record["reproducer"] is None  # no reproducer, no reduction, no report


def test_crashes_of_one_root_cause_are_merged_when_the_seeds_are_done(tmp_path):
    other_program = {**CRASH, "program": "import torch\nx = torch.ones(2).sin()\n",
                     "signature_ops": ["sin"]}
    summary, out = run(tmp_path, {0: {**CRASH, "program": "import torch\n",
                                      "signature_ops": ["cos"]}, 1: other_program})
    assert len(summary["findings"]) == 2  # two generated programs, two signatures
    (cause,) = summary["root_causes"]
    assert cause["findings"] == 2 and cause["seeds"] == [0, 1]
    assert "no kernel for layout" in cause["cause"] and "inductor" not in cause["cause"]
    written = json.loads((out / ROOT_CAUSES).read_text())
    assert written[0]["representative"] == cause["representative"]
    assert len(written[0]["duplicates"]) == 1
