"""The next round matches only the top-level statements a round changed.

After a round's edits are applied, the engine parses the whole new text and matches it
again: a rewrite may enable another, and the output must be a fixed point. That second round
finds nothing on almost every file (none of 395 changed files of transformers 4.57.6 with
the graph-break pack) and cost a fifth of a cold run, because the files changed are the
largest ones. ``incremental.py`` avoids it only for template rules whose edits leave the
file's lines in place; the graph-break kinds insert helpers and read more of the module.

Here the new text is still parsed whole (so line numbers and the validity check are
exact), but the round matches only the statements that are not the old ones unchanged: the
top-level ``def``s and ``class``es that held edits and what the round inserted (helpers,
imports). A statement left unchanged finds what it found in the round before (nothing:
its edits would have been applied) when nothing it reads beyond itself changed, which is
checked here:

- its own text: every unchanged statement is found again, with the same text, in order;
  edits lie only inside the bodies of top-level ``def``s and ``class``es;
- the names it may read: the old text holds no helper name (``_eqrw_``), and the statements
  inserted define or import only such names, so none of them is read by a kept statement;
- the module facts the inference and the kinds read across statements: imports, ``global``
  and ``nonlocal`` names, the functions and classes defined anywhere (return annotations,
  bases, methods) and the functions ``torch.compile`` reaches are compared before and after
  (what was inserted left out);
- the scopes: ``traced`` and ``profiled`` must come from the run (by qualified name, the
  same every round), not be recomputed from the changed module.

Anything else, and the round matches the whole file as before.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.facts import ModuleFacts
from ..analysis.facts.definitions import definition_qualname
from ..analysis.facts.index import index_module
from ..analysis.facts.scopes import FUNCTION_SCOPES
from ..matching.matcher import Edit
from ..matching.rules import Rule
from ..syntax.lines import split_lines
from ..syntax.marks import PREFIX
from ..syntax.nodes import first_line
from .incremental import cross_statement_facts, edited_statements

Roots = list[tuple[ast.AST, tuple[ast.AST, ...]]]


def narrowable(rules: Sequence[Rule], function_scopes: dict[str, frozenset[str]] | None) -> bool:
    """Whether the function scopes these rules use come from the run (not recomputed from
    each round's text, where an edited caller could change them)."""
    given = function_scopes or {}
    return all(name in given for rule in rules for name in rule.scope
               if name in FUNCTION_SCOPES)


@dataclass
class Kept:
    """What a round left unchanged, remembered before its tree is freed."""

    texts: list[str]  # each unchanged top-level statement's source, in order
    edited: list[type[ast.stmt]]  # the types of the statements that held edits, in order
    facts: tuple[object, ...]


def kept_statements(text: str, tree: ast.Module, edits: Sequence[Edit]) -> Kept | None:
    """The statements of ``tree`` (``text``'s) that ``edits`` leave as they are, or None
    when the next round must match the whole file."""
    lines = split_lines(text)
    edited = edited_statements(tree.body, edits, lines, most=True)
    if edited is None:
        return None
    chosen = set(edited)
    texts = [_source(s, lines) for i, s in enumerate(tree.body) if i not in chosen]
    if any(PREFIX in t for t in texts):
        return None  # a kept statement may read a helper the round inserted again
    return Kept(texts, [type(tree.body[i]) for i in edited], _module_facts(tree, text))


def changed_roots(kept: Kept, text: str, tree: ast.Module) -> Roots | None:
    """The top-level statements of the next round's ``tree`` (``text``'s) to match, or None
    when the whole file must be matched (see the module docstring)."""
    lines = split_lines(text)
    roots: Roots = []
    own: list[ast.stmt] = []  # the module less what the round inserted
    edited: list[type[ast.stmt]] = []
    at = 0
    for statement in tree.body:
        if at < len(kept.texts) and _source(statement, lines) == kept.texts[at]:
            at += 1
            own.append(statement)
            continue
        roots.append((statement, ()))
        if not _inserted(statement):
            edited.append(type(statement))
            own.append(statement)
    if at != len(kept.texts) or edited != kept.edited:
        return None
    if _module_facts(ast.Module(body=own, type_ignores=[]), text) != kept.facts:
        return None
    return roots


def _source(statement: ast.stmt, lines: list[str]) -> str:
    """The lines a top-level statement spans (decorators included)."""
    return "".join(lines[first_line(statement) - 1:statement.end_lineno or 0])


def _inserted(statement: ast.stmt) -> bool:
    """A helper's definition, import or attribute (``_eqrw_ready._marked = True``), as the
    apply stage inserts them."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return statement.name.startswith(PREFIX)
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return all((alias.asname or alias.name).startswith(PREFIX) for alias in statement.names)
    if isinstance(statement, ast.Assign):
        return all(_root_name(target).startswith(PREFIX) for target in statement.targets)
    return False


def _root_name(target: ast.expr) -> str:
    """``a`` for ``a``, ``a.b`` and ``a.b.c``; empty for any other target."""
    while isinstance(target, ast.Attribute):
        target = target.value
    return target.id if isinstance(target, ast.Name) else ""


def _module_facts(tree: ast.Module, text: str) -> tuple[object, ...]:
    """What matching one statement reads of the others (see the module docstring)."""
    index = index_module(tree)
    methods = {name: sorted(f.name for f in cls.body
                            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
               for name, cls in index.classes.items()}
    facts = ModuleFacts(tree, text, index=index)
    compiled = Counter(definition_qualname(_chain(f, facts)) for f in facts.compiled.functions)
    return (cross_statement_facts(index), methods, compiled)


def _chain(function: ast.AST, facts: ModuleFacts) -> list[ast.AST]:
    """``function`` and the definitions enclosing it, outermost first."""
    chain: list[ast.AST] = []
    node: ast.AST | None = function
    while node is not None:
        chain.append(node)
        node = facts.definitions.parent.get(node)
    return chain[::-1]
