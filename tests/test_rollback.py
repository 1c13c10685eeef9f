"""The rollback over every round of a rewrite: ``api.rewrite_rounds`` and ``--rollback``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from eqrewrite.rewriter.api import RewriteOptions, load_pack, rewrite_rounds, rewrite_text
from oracle_support import MLP as SHARED_MLP

# Round 1 spells a subtraction and a negation as calls; round 2 rewrites those calls again:
# one correctly (torch.negative), one wrongly (the operands of torch.sub swapped).
TWO_ROUND_PACK = """\
rules:
  - id: sub-call
    description: correct - a subtraction as a call
    pattern: $a - $b
    rewrite: torch.sub($a, $b)
    where:
      - tensor: $a
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return x - 1
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.sub(x, 1)
  - id: swap-sub-call
    description: deliberately wrong - swaps the operands of torch.sub
    pattern: torch.sub($a, $b)
    rewrite: torch.subtract($b, $a)
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return torch.sub(x, 1)
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.subtract(1, x)
  - id: neg-call
    description: correct - a negation as a call
    pattern: -$a
    rewrite: torch.neg($a)
    where:
      - tensor: $a
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return -x
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.neg(x)
  - id: neg-spelled
    description: correct - torch.neg spelled torch.negative
    pattern: torch.neg($a)
    rewrite: torch.negative($a)
    examples:
      - before: |
          import torch
          def f(x: torch.Tensor):
              return torch.neg(x)
        after: |
          import torch
          def f(x: torch.Tensor):
              return torch.negative(x)
"""

# The comment names torch.sub and torch.neg: a rule runs on a file only when the file holds
# its tokens from the start, so the second-round rules need it.
MLP = SHARED_MLP + "# Rewritten, this module calls torch.sub and torch.neg.\n"
RETURN_LINE = 13


@pytest.fixture
def pack(tmp_path) -> Path:
    path = tmp_path / "two_rounds.yaml"
    path.write_text(TWO_ROUND_PACK)
    return path


def _last_return(text: str) -> str:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("return (")
            or "2 +" in line][0]


def test_rounds_hold_every_edit_of_the_rewrite_at_its_original_line(pack):
    rules = load_pack(str(pack)).rules
    rounds = rewrite_rounds(MLP, rules, RewriteOptions())
    made = [(e.round, e.edit.rule.id, e.lines) for e in rounds.edits]
    assert made == [(1, "sub-call", (13, 13)), (1, "neg-call", (13, 13)),
                    (2, "swap-sub-call", (13, 13)), (2, "neg-spelled", (13, 13))]
    assert rounds.without(set()) == rewrite_text(MLP, rules).text
    assert rounds.without({(e.round, e.index) for e in rounds.edits}) == MLP


def test_a_replay_leaves_out_an_edit_in_every_later_round_and_what_rewrote_it(pack):
    rounds = rewrite_rounds(MLP, load_pack(str(pack)).rules, RewriteOptions())
    index = {e.edit.rule.id: (e.round, e.index) for e in rounds.edits}
    assert _last_return(rounds.without({index["swap-sub-call"]})) == (
        "return torch.sub(h, y) * 2 + torch.negative(h)")
    # Without the first-round call, its second-round rewrite has nothing to rewrite, and the
    # subtraction stays as written although the same rule matches it again in round 2.
    assert _last_return(rounds.without({index["sub-call"]})) == (
        "return (h - y) * 2 + torch.negative(h)")
    assert _last_return(rounds.without({index["neg-spelled"]})) == (
        "return torch.subtract(y, h) * 2 + torch.neg(h)")


def test_a_breaking_edit_of_the_second_round_is_rolled_back(pack, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "good.py").write_text(textwrap.dedent(MLP))
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "eqrewrite.rewriter", str(source), "--rules", str(pack),
         "--oracle", "--rollback", "--out", str(out), "--no-cache", "--backend", "eager",
         "--no-breaks"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"reverted in good.py::Mlp: good.py:{RETURN_LINE} swap-sub-call" in result.stdout
    assert "passed" in result.stdout
    # Every other edit stays, the correct second-round one included.
    assert _last_return((out / "good.py").read_text()) == (
        "return torch.sub(h, y) * 2 + torch.negative(h)")
