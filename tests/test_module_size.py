"""A module of ``rewriter/`` or ``oracle/`` over 600 lines holds one concern and says which.

A file that grows past that size usually holds two concerns and should be split by concern;
the ones that do not (a comparison of every kind of value, the inference of every kind of
expression) say so in their docstring, on a line starting ``One concern:``, which a reader
can check against the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 600


def oversized(root: Path = ROOT) -> list[str]:
    """The modules over LIMIT lines whose docstring names no single concern."""
    found = []
    for folder in ("rewriter", "oracle"):
        for path in sorted((root / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if text.count("\n") <= LIMIT:
                continue
            docstring = ast.get_docstring(ast.parse(text)) or ""
            if not any(line.startswith("One concern: ") for line in docstring.splitlines()):
                found.append(str(path.relative_to(root)))
    return found


def test_every_long_module_states_its_one_concern():
    assert oversized() == []


def test_the_check_finds_a_long_module_without_its_concern(tmp_path):
    folder = tmp_path / "oracle"
    folder.mkdir()
    body = "x = 1\n" * (LIMIT + 1)
    (folder / "long.py").write_text('"""Two things."""\n' + body)
    (folder / "stated.py").write_text('"""Comparison.\n\nOne concern: comparing."""\n' + body)
    (folder / "short.py").write_text('"""Short."""\n')
    assert oversized(tmp_path) == ["oracle/long.py"]
