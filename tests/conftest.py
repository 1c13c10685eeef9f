"""Shared helpers: rewrite a snippet with packaged rules, write rule packs to disk."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

# `x.sub(y)` becomes `x - y`, which the default pack's sub-to-torch-sub rewrites in the next
# round: a cascade that a later round must still find (test_incremental, test_narrowing).
SUB_METHOD_RULE = """
  - id: sub-method-to-operator
    description: x.sub(y) is x - y
    pattern: $x.sub($y)
    rewrite: $x - $y
    where:
      - tensor: $x
      - numeric: $y
"""


def cascade_rules(folder: Path, more: str = "") -> list:
    """``SUB_METHOD_RULE`` (and the rules in ``more``) then the default pack's
    sub-to-torch-sub."""
    pack = write_pack(folder, "rules:" + textwrap.indent(
        textwrap.dedent(SUB_METHOD_RULE + more), "  "))
    return (load_pack(str(pack)).rules
            + [r for r in load_pack("default").rules if r.id == "sub-to-torch-sub"])


@pytest.fixture(scope="session")
def default_rules():
    """Every rule of the default pack, unsafe ones included."""
    return load_pack("default").rules


def rewrite(source: str, rules, only: set[str] | None = None, **options) -> str:
    """Rewrite a dedented snippet with ``rules`` (optionally only some ids)."""
    chosen = [r for r in rules if only is None or r.id in only]
    chosen = select_rules(chosen, RewriteOptions(**options))
    return rewrite_source(textwrap.dedent(source), chosen, RewriteOptions(**options)).text


def write_pack(folder: Path, body: str, name: str = "pack.yaml") -> Path:
    """Write a rule pack (dedented YAML) and return its path."""
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path
