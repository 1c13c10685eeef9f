"""The unified diffs --diff prints: difflib's format, in linear time when lines keep their place."""

from __future__ import annotations

import difflib
import random
import re

import pytest
from eqrewrite.rewriter.running.diffs import unified_diff


def reference(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a", "b"))


def patched(old: str, diff: str) -> str:
    """``old`` with the hunks of ``diff`` applied (a minimal `patch`)."""
    lines = old.splitlines(True)
    out: list[str] = []
    at = 0
    body = diff.splitlines(True)[2:]
    for line in body:
        header = re.match(r"@@ -(\d+)(?:,(\d+))? ", line)
        if header:
            start = int(header.group(1)) - (0 if header.group(2) == "0" else 1)
            out += lines[at:start]
            at = start
        elif line[0] in " -":
            assert lines[at] == line[1:], (at, line)
            at += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return "".join(out + lines[at:])


def edited(lines: list[str], seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    new = list(lines)
    for index in rng.sample(range(len(lines)), count):
        new[index] = new[index].replace("x", "torch.neg(x)", 1)
    return new


@pytest.mark.parametrize("seed", range(5))
def test_line_for_line_rewrites_give_difflibs_diff(seed):
    lines = [f"y{i} = x + {i}\n" for i in range(400)]
    old, new = "".join(lines), "".join(edited(lines, seed, 40))
    assert unified_diff(old, new, "a", "b") == reference(old, new)


@pytest.mark.parametrize("seed", range(5))
def test_repeated_lines_give_a_diff_that_patches_old_into_new(seed):
    # With repeated lines difflib may align differently; the diff must still be right.
    lines = [("return x\n" if i % 3 else "\n") for i in range(300)]
    old, new = "".join(lines), "".join(edited(lines, seed, 30))
    diff = unified_diff(old, new, "a", "b")
    assert diff.startswith("--- a\n+++ b\n@@ -")
    assert patched(old, diff) == new


def test_hunks_merge_when_at_most_twice_the_context_apart():
    lines = [f"v{i} = x\n" for i in range(40)]
    near = list(lines)
    near[10] = near[10].replace("x", "-x")
    near[17] = near[17].replace("x", "-x")  # 6 unchanged lines between: one hunk
    far = list(near)
    far[17], far[18] = lines[17], lines[18].replace("x", "-x")  # 7 between: two hunks
    for new in (near, far):
        diff = unified_diff("".join(lines), "".join(new), "a", "b")
        assert diff == reference("".join(lines), "".join(new))
    assert unified_diff("".join(lines), "".join(near), "a", "b").count("@@ -") == 1
    assert unified_diff("".join(lines), "".join(far), "a", "b").count("@@ -") == 2


def test_changes_at_the_edges_and_a_missing_final_newline():
    old = "a = x\nb = x\nc = x"
    new = "a = -x\nb = x\nc = -x"
    assert unified_diff(old, new, "a", "b") == reference(old, new)


def test_rewrites_that_change_the_line_count_use_difflib():
    old = "def f(x):\n    return x\n"
    new = "import torch\ndef f(x):\n    return torch.neg(x)\n"
    assert unified_diff(old, new, "a", "b") == reference(old, new)


def test_no_change_is_no_diff():
    assert unified_diff("x = 1\n", "x = 1\n", "a", "b") == ""
