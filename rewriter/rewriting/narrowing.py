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

Inside an edited class, the same holds one level down: when every edit lay in the body of
a method other than ``__init__`` (whose stores say which attributes a class owns) and no
edited method stores on ``self`` (the inference reads those stores when another method
reads ``self.x``), the round matches only the edited methods, provided the class's header
and every other member have the same text and each edited method the same signature and the
same answer to ``changes_state`` (which select reads of a method called on ``self``). A
rule matching whole classes turns this off.

Anything else, and the round matches the whole file as before.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.facts import ModuleFacts
from ..analysis.facts.classes import changes_state, stores_on_self
from ..analysis.facts.scopes import FUNCTION_SCOPES
from ..matching.matcher import Edit, Roots
from ..matching.rules import Rule
from ..syntax.lines import split_lines
from ..syntax.marks import PREFIX
from ..syntax.nodes import first_line
from .incremental import cross_statement_facts, edited_statements, inside_body


def narrowable(rules: Sequence[Rule], function_scopes: dict[str, frozenset[str]] | None) -> bool:
    """Whether the function scopes these rules use come from the run (not recomputed from
    each round's text, where an edited caller could change them)."""
    given = function_scopes or {}
    return all(name in given for rule in rules for name in rule.scope
               if name in FUNCTION_SCOPES)


@dataclass
class Member:
    """An edited method of a class whose edits all lie in method bodies."""

    name: str
    header: str  # decorators and signature: the lines before its body
    changes_state: bool  # what select reads of a method called on self


# A class's members as a round left them: a kept member's text, or an edited method.
Members = list[str | Member]


@dataclass
class Kept:
    """What a round left unchanged, remembered before its tree is freed."""

    texts: list[str]  # each unchanged top-level statement's source, in order
    edited: list[type[ast.stmt]]  # the types of the statements that held edits, in order
    # For each of those: a class whose edits all lie in method bodies that kept its state
    # (see ``_members``): the next round matches only those methods. Else None.
    classes: list[tuple[str, Members] | None]
    facts: tuple[object, ...]


def kept_statements(text: str, tree: ast.Module, edits: Sequence[Edit],
                    rules: Sequence[Rule], facts: ModuleFacts | None = None) -> Kept | None:
    """The statements of ``tree`` (``text``'s) that ``edits`` leave as they are, or None
    when the next round must match the whole file. ``facts``: ``tree``'s, if the round
    that found ``edits`` built them."""
    lines = split_lines(text)
    edited = edited_statements(tree.body, edits, lines, most=True)
    if edited is None:
        return None
    chosen = set(edited)
    texts = [_source(s, lines) for i, s in enumerate(tree.body) if i not in chosen]
    if any(PREFIX in t for t in texts):
        return None  # a kept statement may read a helper the round inserted again
    # A rule matching a whole class reads every method: then classes are matched whole.
    by_method = not any(key[0] is ast.ClassDef for rule in rules for key in rule.keys)
    starts = [first_line(s) for s in tree.body]
    inside: dict[int, list[Edit]] = {}
    for edit in edits:
        inside.setdefault(bisect_right(starts, edit.span[0]) - 1, []).append(edit)
    classes: list[tuple[str, Members] | None] = []
    for index in edited:
        statement = tree.body[index]
        classes.append(_members(statement, inside[index], lines)
                       if by_method and isinstance(statement, ast.ClassDef) else None)
    return Kept(texts, [type(tree.body[i]) for i in edited], classes,
                _module_facts(tree, text) if facts is None else _cross_statement(facts))


def changed_roots(kept: Kept, text: str, tree: ast.Module) -> Roots | None:
    """The top-level statements of the next round's ``tree`` (``text``'s) to match, or None
    when the whole file must be matched (see the module docstring). An edited class whose
    edits all lay in method bodies gives only those methods, when the class is otherwise
    as it was."""
    lines = split_lines(text)
    roots: Roots = []
    own: list[ast.stmt] = []  # the module less what the round inserted
    edited: list[ast.stmt] = []
    at = 0
    for statement in tree.body:
        if at < len(kept.texts) and _source(statement, lines) == kept.texts[at]:
            at += 1
            own.append(statement)
        elif _inserted(statement):
            roots.append((statement, ()))
        else:
            edited.append(statement)
            own.append(statement)
    if at != len(kept.texts) or [type(s) for s in edited] != kept.edited:
        return None
    if _module_facts(ast.Module(body=own, type_ignores=[]), text) != kept.facts:
        return None
    for statement, members in zip(edited, kept.classes, strict=True):
        methods = None if members is None else _same_class(statement, members, lines)
        roots += [(statement, ())] if methods is None else [(m, (statement,)) for m in methods]
    return sorted(roots, key=_position)


def _members(cls: ast.ClassDef, edits: list[Edit], lines: list[str]
             ) -> tuple[str, Members] | None:
    """``cls``'s header text and members, when every edit lies in the body of one of its
    methods (not ``__init__``, which the kinds read for the attributes a class owns) and no
    edited method stores on ``self`` (the inference reads those stores from other
    methods); else None."""
    methods = [m for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
    edited: set[ast.AST] = set()
    for edit in edits:
        method = next((m for m in methods if inside_body(m, edit.span, lines)), None)
        if method is None or method.name == "__init__":
            return None
        edited.add(method)
    if any(stores_on_self(method) for method in edited):
        return None
    if first_line(cls.body[0]) <= cls.lineno:
        return None  # `class A: x = 1`: no header of its own
    members: Members = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node in edited:
            members.append(Member(node.name, _header(node, lines), changes_state(node)))
        else:
            members.append(_source(node, lines))
    return _header(cls, lines), members


def _same_class(statement: ast.stmt, kept: tuple[str, Members], lines: list[str]
                ) -> list[ast.stmt] | None:
    """The edited methods of ``statement`` (the next round's version of a class that
    ``_members`` described), or None when anything else of the class differs: its header,
    a member's text, an edited method's name, signature or what it stores and changes."""
    header, members = kept
    if (not isinstance(statement, ast.ClassDef) or first_line(statement.body[0]) <= statement.lineno
            or _header(statement, lines) != header or len(statement.body) != len(members)):
        return None
    methods: list[ast.stmt] = []
    for node, member in zip(statement.body, members, strict=True):
        if isinstance(member, str):
            if _source(node, lines) != member:
                return None
        elif (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
              and node.name == member.name and _header(node, lines) == member.header
              and not stores_on_self(node) and changes_state(node) == member.changes_state):
            methods.append(node)
        else:
            return None
    return methods


def _position(root: tuple[ast.AST, tuple[ast.AST, ...]]) -> tuple[int, int]:
    """Where a root starts: the matcher reports edits in source order."""
    return getattr(root[0], "lineno", 0), getattr(root[0], "col_offset", 0)


def _header(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
            lines: list[str]) -> str:
    """The lines of a definition before its body: decorators, signature, bases."""
    return "".join(lines[first_line(definition) - 1:first_line(definition.body[0]) - 1])


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
    return _cross_statement(ModuleFacts(tree, text))


def _cross_statement(facts: ModuleFacts) -> tuple[object, ...]:
    """``_module_facts`` of the module ``facts`` describe."""
    methods = {name: sorted(f.name for f in cls.body
                            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
               for name, cls in facts.index.classes.items()}
    compiled = Counter(facts.definitions.qualname(f) for f in facts.compiled.functions)
    return (cross_statement_facts(facts.index), methods, compiled)
