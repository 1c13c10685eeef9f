"""Run the examples embedded in rule packs (``eqrewrite rules test``).

Each ``before`` must become exactly its ``after`` under its own rule alone, the
``after`` must be a fixed point, and each ``unchanged`` snippet must stay as it
is. A rule without examples fails: an untested rule is not a passing one.
Examples leave out the block of helpers that graph-break rewrites insert; the
block is checked instead to define every helper the rewritten code calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..matching.rules import Rule, RulePack
from ..rewriting.engine import RewriteError, RewriteOptions, rewrite_source
from ..rewriting.helpers import strip_block
from ..syntax.marks import PREFIX


@dataclass
class Failure:
    """One failed example, with what was expected and what came out."""

    rule: Rule
    line: int
    message: str


def check_rule(rule: Rule) -> list[Failure]:
    """Every way ``rule``'s examples fail (empty when they all pass)."""
    if not rule.examples:
        return [Failure(rule, rule.line, "rule has no examples")]
    failures = []
    options = RewriteOptions(unsafe=True)
    for example in rule.examples:
        expected = example.before if example.after is None else example.after
        try:
            full = rewrite_source(example.before, [rule], options).text
            again = rewrite_source(full, [rule], options).text
        except RewriteError as error:
            failures.append(Failure(rule, example.line, f"example does not rewrite: {error}"))
            continue
        missing = undefined_helpers(full)
        if missing:
            failures.append(Failure(rule, example.line, "the rewrite calls helpers it does not "
                                    f"define: {', '.join(missing)}"))
        got = strip_block(full)
        if got != expected:
            failures.append(Failure(rule, example.line,
                                    f"expected:\n{_indent(expected)}\ngot:\n{_indent(got)}"))
        elif again != full:
            failures.append(Failure(rule, example.line,
                                    f"rewriting the result again changes it:\n{_indent(again)}"))
    return failures


def check_pack(pack: RulePack) -> list[Failure]:
    """Failures of every rule in ``pack``."""
    return [failure for rule in pack.rules for failure in check_rule(rule)]


def count_examples(pack: RulePack) -> int:
    """How many examples ``pack`` embeds."""
    return sum(len(rule.examples) for rule in pack.rules)


def undefined_helpers(text: str) -> list[str]:
    """Helper names a rewritten text calls but does not define."""
    import re

    called = set(re.findall(rf"\b({PREFIX}\w+)\(", text))
    defined = set(re.findall(rf"^(?:def|class) ({PREFIX}\w+)\b", text, flags=re.MULTILINE))
    return sorted(called - defined)


def _indent(text: str) -> str:
    return "".join("    | " + line for line in text.splitlines(keepends=True))
