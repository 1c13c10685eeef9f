"""The next round's tree without parsing the whole file again.

After a round's edits are applied, the engine must parse the new text (to prove it is still
Python) and match it again (a rewrite may enable another). On real code most of a changed
file is untouched: in torch's sources, the top-level functions and classes holding edits
are a fifth of the changed files' text. When the edits leave everything outside those
statements as it was, only those statements are parsed again (in one parse, each at its
own lines, empty lines standing for the rest) and spliced into the old tree, and the next
round matches only them. When they make up most of the file, one whole parse is cheaper
than the checks.

That next round finds exactly what matching the whole new file would, because a
statement outside the re-parsed ones can only be matched differently if something it
depends on changed, and every such dependency is checked here or by ``eligible``:

- its own text and lines: every line outside the re-parsed statements is unchanged, and
  the file has as many lines as before (an added import or helper fails this);
- module-level bindings: edits lie only inside the bodies of top-level ``def``s and
  ``class``es, never in a header (decorators, defaults, annotations, bases), so no
  module-level name is rebound;
- the module facts that inference reads across statements: imports, ``global`` and
  ``nonlocal`` names, the functions and classes defined anywhere (with the return
  annotations and bases that inference reads) are compared before and after;
- the rules: only template rules with the ``everywhere`` scope and no assumption about
  ``forward`` parameters (structural kinds and scoped rules read more of the module).

Anything else, and the engine parses and matches the whole file as before.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.facts import ModuleFacts
from ..analysis.facts.index import ModuleIndex, index_module
from ..matching.matcher import Edit, Roots
from ..matching.rules import Rule
from ..syntax.enums import Scope
from ..syntax.lines import split_lines
from ..syntax.nodes import first_line

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Reparsed:
    """The new text's tree and the top-level statements the next round must match."""

    tree: ast.Module
    facts: ModuleFacts
    roots: Roots


def eligible(rules: Sequence[Rule], assume_tensor_params: object) -> bool:
    """Whether these rules read nothing of a module beyond what ``reparse`` checks."""
    return not assume_tensor_params and all(
        rule.implementation is None and Scope.EVERYWHERE in rule.scope for rule in rules)


def reparse(old_text: str, new_text: str, tree: ast.Module,
            edits: Sequence[Edit]) -> Reparsed | None:
    """The tree of ``new_text`` (``old_text`` with ``edits`` applied; ``tree`` its parse)
    built by parsing only the top-level statements holding edits, or None when the
    conditions in the module docstring do not hold.

    Raises SyntaxError, as ``ast.parse`` would, when a re-parsed statement is invalid.
    """
    old_lines, new_lines = split_lines(old_text), split_lines(new_text)
    if len(old_lines) != len(new_lines):
        return None
    edited = edited_statements(tree.body, edits, old_lines)
    if edited is None:
        return None
    ranges = [(first_line(tree.body[i]), tree.body[i].end_lineno or 0) for i in edited]
    kept_from = 0
    pieces: list[str] = []
    for first, last in ranges:
        if new_lines[kept_from:first - 1] != old_lines[kept_from:first - 1]:
            return None
        # Empty lines in place of the others give each statement its real line numbers,
        # and all are parsed in one call.
        pieces += ["\n" * (first - 1 - kept_from), *new_lines[first - 1:last]]
        kept_from = last
    if new_lines[kept_from:] != old_lines[kept_from:]:
        return None
    parsed = ast.parse("".join(pieces)).body
    if [type(s) for s in parsed] != [type(tree.body[i]) for i in edited]:
        return None
    body = list(tree.body)
    for index, statement in zip(edited, parsed, strict=True):
        body[index] = statement
    roots: Roots = [(s, ()) for s in parsed]
    new_tree = ast.Module(body=body, type_ignores=tree.type_ignores)
    new_index = index_module(new_tree)
    if cross_statement_facts(index_module(tree)) != cross_statement_facts(new_index):
        return None
    return Reparsed(new_tree, ModuleFacts(new_tree, new_text, index=new_index), roots)


def edited_statements(body: list[ast.stmt], edits: Sequence[Edit], lines: list[str],
                       most: bool = False) -> list[int] | None:
    """Indexes of the top-level statements holding ``edits``, in order, or None when an
    edit lies outside the body of a top-level ``def`` or ``class``, one such statement
    shares a line with another, or (unless ``most``) they make up most of the file."""
    starts = [first_line(statement) for statement in body]
    found: set[int] = set()
    covered = 0  # lines of the statements found: past half the file, a whole parse is cheaper
    for edit in edits:
        index = bisect_right(starts, edit.span[0]) - 1
        if index < 0 or not inside_body(body[index], edit.span, lines):
            return None
        if index not in found:
            found.add(index)
            covered += (body[index].end_lineno or 0) - starts[index] + 1
            if covered * 2 > len(lines) and not most:
                return None
    for index in found:
        before = body[index - 1].end_lineno if index else 0
        after = starts[index + 1] if index + 1 < len(body) else None
        if (before or 0) >= starts[index] or (
                after is not None and after <= (body[index].end_lineno or 0)):
            return None
    return sorted(found)


def inside_body(statement: ast.stmt, span: tuple[int, int, int, int],
                 lines: list[str]) -> bool:
    if not isinstance(statement, _DEFINITIONS):
        return False
    first = statement.body[0]
    # The body must start on a line of its own (not `def f(): return x`), so that every
    # position from that line on is inside it.
    if first.lineno <= statement.lineno or lines[first.lineno - 1][:first.col_offset].strip():
        return False
    return span[0] >= first.lineno and span[2] <= (statement.end_lineno or 0)


def cross_statement_facts(index: ModuleIndex) -> tuple[object, ...]:
    """What inference reads of one statement while matching another."""
    functions = {name: [_dump(d.returns) for d in defs if not isinstance(d, ast.Lambda)]
                 for name, defs in index.functions.items()}
    classes = {name: [_dump(b) for b in [*cls.bases, *cls.keywords]]
               for name, cls in index.classes.items()}
    return (index.aliases, index.global_names, index.nonlocal_names, functions, classes)


def _dump(node: ast.AST | None) -> str | None:
    return None if node is None else ast.dump(node)
