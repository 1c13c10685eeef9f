"""Shared helpers: rewrite a snippet with packaged rules, write rule packs to disk."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from eqrewrite.rewriter.matching.rules import load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules


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
