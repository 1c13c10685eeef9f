"""Where a rule may rewrite: whether a node's enclosing functions lie in a rule's scope.

Also the names a module writes through ``global`` and ``nonlocal``, which the inference
must treat as holding anything.
"""

from __future__ import annotations

import ast
from collections.abc import Set as AbstractSet

from ...syntax.enums import Scope
from ...syntax.marks import PREFIX as HELPER_PREFIX
from .classes import ModuleClasses
from .compiled import CompiledFunctions
from .definitions import Definitions, definition_qualname
from .text import TextIndex

_RULE_SCOPES = frozenset({Scope.EVERYWHERE, Scope.FORWARD, Scope.COMPILED, Scope.TRACED})
# Scopes given as sets of qualified function names (see callgraph.py): ``traced`` is the
# static call graph, ``profiled`` the functions a recorded run saw Dynamo trace.
FUNCTION_SCOPES = (Scope.TRACED, Scope.PROFILED)
# Read for every node a rule is tried on: bound once (reading an enum member on Python
# 3.11 is a descriptor call).
_EVERYWHERE, _FORWARD, _COMPILED = Scope.EVERYWHERE, Scope.FORWARD, Scope.COMPILED


def known_scopes() -> frozenset[Scope]:
    """Names accepted by a rule's ``scope``."""
    return _RULE_SCOPES


def possible_scopes(text: str, names: AbstractSet[str],
                    function_scopes: dict[str, frozenset[str]] | None,
                    forward_traced: bool = False) -> frozenset[str]:
    """The scope ``names`` some code of the module ``text`` may lie in: a name is left out
    only when no code can (no ``forward`` method without the word, nothing compiled without
    ``compile`` or ``optimize``, which ``TextIndex.may_compile`` requires too, and no
    function of this file in the function scopes computed over the run), so that a rule of
    those scopes alone need not walk the module at all.

    ``forward_traced``: the ``traced`` scope in ``function_scopes`` was solved over this very
    text, where every method called ``forward`` is a root and so traced: a file with no
    traced function has no ``forward`` method, whatever its text says (a third of the files
    of transformers that mention the word)."""
    return frozenset(name for name in names
                     if _may_hold(name, text, function_scopes, forward_traced))


def _may_hold(name: str, text: str, function_scopes: dict[str, frozenset[str]] | None,
              forward_traced: bool) -> bool:
    if name == _FORWARD:
        if forward_traced:
            return bool(function_scopes and function_scopes.get(Scope.TRACED))
        return "forward" in text
    if name == _COMPILED:
        return "compile" in text or "optimize" in text
    if name in FUNCTION_SCOPES:  # (a scope not given is computed from the module itself)
        return function_scopes is None or bool(function_scopes.get(name, True))
    return True  # everywhere


def in_helper(chain: tuple[ast.AST, ...]) -> bool:
    """Whether ``chain`` runs through an inserted helper: they hold the original code, and
    are never in any scope (never rewritten)."""
    return any(getattr(f, "name", "").startswith(HELPER_PREFIX) for f in chain)


class Scopes:
    """Scope tests for the nodes of one module."""

    def __init__(self, tree: ast.Module, text: TextIndex, classes: ModuleClasses,
                 compiled: CompiledFunctions, definitions: Definitions,
                 function_scopes: dict[str, frozenset[str]] | None,
                 global_names: set[str], nonlocal_names: set[str]):
        self._tree = tree
        self._definitions = definitions
        self._enclosing: dict[frozenset[str], frozenset[ast.AST] | None] = {}
        self._text = text
        self._classes = classes
        self._compiled = compiled
        # Qualified names of the functions in each function scope; a scope missing here
        # (a single text rewritten on its own) is computed from this module alone.
        self.function_scopes = dict(function_scopes or {})
        self._in_function_scope: dict[tuple[str, tuple[ast.AST, ...]], bool] = {}
        self._in_scope: dict[tuple[frozenset[str], tuple[ast.AST, ...]], bool] = {}
        self.global_names = global_names
        self.nonlocal_names = nonlocal_names

    def in_scope(self, scope: AbstractSet[str], chain: tuple[ast.AST, ...]) -> bool:
        """Whether a node whose enclosing functions are ``chain`` lies in ``scope`` (asked
        for every node a rule is tried on, of the few chains a module has: remembered)."""
        key = (scope if isinstance(scope, frozenset) else frozenset(scope), chain)
        found = self._in_scope.get(key)
        if found is None:
            found = self._in_scope[key] = self._decide(scope, chain)
        return found

    def _decide(self, scope: AbstractSet[str], chain: tuple[ast.AST, ...]) -> bool:
        if in_helper(chain):
            return False
        if _EVERYWHERE in scope:
            return True
        if _FORWARD in scope and any(self._classes.is_forward(f) for f in chain):
            return True
        if _COMPILED in scope and any(f in self._compiled.functions for f in chain):
            return True
        return any(name in scope and self._in_function_scope_of(name, chain)
                   for name in FUNCTION_SCOPES)

    def may_hold_inside(self, names: frozenset[str], definition: ast.AST) -> bool:
        """Whether some code inside ``definition`` (a function or class) may lie in one of
        the scopes ``names`` however the code around it is scoped: it is or holds a
        ``forward`` method, a compiled function or a function of a function scope. Code
        inside a definition for which this is False is in none of them unless the
        definitions enclosing it are (``in_scope`` of its chain), so a walk may skip it."""
        if names not in self._enclosing:
            self._enclosing[names] = self._holding_definitions(names)
        holding = self._enclosing[names]
        return holding is None or definition in holding

    def _holding_definitions(self, names: frozenset[str]) -> frozenset[ast.AST] | None:
        """The functions and classes that are, or hold, one in the scopes ``names``; None
        when any code may be (``everywhere``, or a compiled lambda, which the definitions'
        nesting does not list)."""
        if _EVERYWHERE in names or (_COMPILED in names and any(
                isinstance(f, ast.Lambda) for f in self._compiled.functions)):
            return None
        parent = self._definitions.parent
        scoped: list[ast.AST] = []
        if _FORWARD in names:
            scoped += [f for f in parent if self._classes.is_forward(f)]
        if _COMPILED in names:
            scoped += self._compiled.functions
        qualnames = frozenset().union(*(self._function_scope(name) for name in FUNCTION_SCOPES
                                        if name in names))
        if qualnames:
            scoped += [d for d in parent if self._definitions.qualname(d) in qualnames]
        found: set[ast.AST] = set()
        for definition in scoped:
            node: ast.AST | None = definition
            while node is not None and node not in found:
                found.add(node)
                node = parent.get(node)
        return frozenset(found)

    def _function_scope(self, name: str) -> frozenset[str]:
        """The qualified names in the function scope ``name`` (computed from this module
        alone when the run gave none)."""
        if name not in self.function_scopes:
            self.function_scopes[name] = self._own_scope(name)
        return self.function_scopes[name]

    def _in_function_scope_of(self, name: str, chain: tuple[ast.AST, ...]) -> bool:
        key = (name, chain)
        if key not in self._in_function_scope:
            names = self._function_scope(name)
            self._in_function_scope[key] = bool(names) and any(
                definition_qualname(chain[:i + 1]) in names for i in range(len(chain)))
        return self._in_function_scope[key]

    def _own_scope(self, name: str) -> frozenset[str]:
        """``traced`` computed from this module alone (no other file known); ``profiled``
        is empty without a profile."""
        if name != Scope.TRACED:
            return frozenset()
        from ..callgraph import CallGraph  # the call graph's modules import the facts
        from ..modulesummary import summarize

        summary = summarize("<module>", self._text.source or ast.unparse(self._tree),
                            "__main__")
        return CallGraph([summary]).traced().get("<module>", frozenset()) if summary else (
            frozenset())
