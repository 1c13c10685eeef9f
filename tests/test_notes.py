"""Graph breaks the pack recognises but cannot rewrite are reported with the reason."""

from __future__ import annotations

import json

from click.testing import CliRunner
from eqrewrite.rewriter.cli import main

SOURCE = '''import torch


class Scores(torch.nn.Module):
    def forward(self, scores: torch.Tensor, flags: torch.Tensor):
        is_global = flags.any().item()
        if is_global:
            extra = scores[:, :1]
            scores = torch.cat((extra, scores), -1)
        if scores.max() > 3:
            return None
        if scores.min() < -3:  # eqrewrite: ignore
            return None
        if scores.shape[0] > 1:
            scores = scores * 2
        return scores
'''


def test_unexpressible_data_dependent_ifs_are_reported(tmp_path):
    path = tmp_path / "scores.py"
    path.write_text(SOURCE)
    result = CliRunner().invoke(main, [str(path), "--rules", "graphbreaks", "--no-cache",
                                       "--check", "--format", "json"])
    assert result.exit_code == 0, result.output  # nothing rewritten
    notes = json.loads(result.stdout)["notes"]
    assert [(n["line"], n["rule"]) for n in notes] == [(7, "select-assign"),
                                                       (10, "select-assign")]
    assert ".item()" in notes[0]["message"] and "not proven to be a tensor" in notes[1][
        "message"]
    text = CliRunner().invoke(main, [str(path), "--rules", "graphbreaks", "--no-cache",
                                     "--check"])
    assert f"note: {path}:7:9: select-assign: the condition is a Python value" in text.stderr
