"""Shared by the rule tests: a pack's rules picked by id, a source rewritten with them, and a
source run as a module."""

from __future__ import annotations

from eqrewrite.rewriter.matching.rules import Rule, load_pack
from eqrewrite.rewriter.rewriting.engine import RewriteOptions, rewrite_source, select_rules

# Every function in scope: the tests' sources hold plain functions as well as forward().
EVERYWHERE = RewriteOptions(scope=frozenset({"everywhere"}))


def pack_rules(pack: str, *ids: str) -> list[Rule]:
    """The rules of ``pack`` with these ids, as the engine selects them everywhere."""
    rules = [r for r in select_rules(load_pack(pack).rules, EVERYWHERE) if r.id in ids]
    assert {r.id for r in rules} == set(ids), f"not in {pack}: {set(ids) - {r.id for r in rules}}"
    return rules


def rewrite(source: str, rules: list[Rule]) -> str:
    """``source`` rewritten with ``rules`` everywhere."""
    return rewrite_source(source, rules, EVERYWHERE).text


def run_module(text: str, name: str = "<module>") -> dict:
    """The globals of ``text`` run as a module."""
    namespace: dict = {}
    exec(compile(text, name, "exec"), namespace)
    return namespace
