"""Facts about one module that every rule consults: imports, classes, scopes.

Built once per file from its ``ast`` tree, and only for files in which some
pattern matched, so files no rule can touch never pay for it.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from functools import cached_property
from typing import TypeGuard

from .enums import Scope
from .helpers import PREFIX as HELPER_PREFIX
from .layout import split_lines
from .nodes import BLOCK_FIELDS, end_line
from .pattern import dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
Def = ast.FunctionDef | ast.AsyncFunctionDef
# ``self.attribute = value`` in a class: (attribute, value, method). The value of ``+=``
# is the whole statement; of ``register_buffer(name, value)``, the value argument.
SelfAssignment = tuple[str, ast.expr | ast.AugAssign, Def]
_COMPILERS = frozenset({"torch.compile", "torch._dynamo.optimize"})
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


def qualname(chain: Sequence[ast.AST]) -> str:
    """Python's ``__qualname__`` for the innermost function or class of ``chain``."""
    parts: list[str] = []
    for node in chain:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            parts.append(node.name)
        elif isinstance(node, ast.Lambda):
            parts.append("<lambda>")
        else:
            continue
        if not isinstance(node, ast.ClassDef):
            parts.append("<locals>")
    while parts and parts[-1] == "<locals>":
        parts.pop()
    return ".".join(parts)


class ModuleFacts:
    """Imports, classes and compiled functions of one parsed module."""

    def __init__(self, tree: ast.Module, text: str | None = None,
                 function_scopes: dict[str, frozenset[str]] | None = None):
        self.tree = tree
        self.text = text
        # Qualified names of the functions in each function scope; a scope missing here
        # (a single text rewritten on its own) is computed from this module alone.
        self.function_scopes = dict(function_scopes or {})
        self._in_function_scope: dict[tuple[str, tuple[ast.AST, ...]], bool] = {}
        self.has_walrus = text is None or ":=" in text
        self._lines_with: dict[str, list[int] | None] = {}
        self.may_compile = text is None or "compile" in text or "optimize" in text
        self.aliases: dict[str, str] = {}
        self.parent: dict[ast.AST, ast.AST | None] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, list[Function]] = {}
        self._self_assignments: dict[ast.ClassDef, list[SelfAssignment]] = {}
        self.global_names: set[str] = set()
        self.nonlocal_names: set[str] = set()
        self._index(tree.body, None)

    def _index(self, body: Sequence[ast.AST], owner: ast.AST | None) -> None:
        # ``parent`` maps each function and class to the nearest enclosing one. Imports,
        # functions and classes are statements: only blocks of statements are entered.
        for child in body:
            if type(child) in _LEAF_STATEMENTS:
                continue  # most statements: nothing to record, no block inside
            if isinstance(child, ast.Global):
                self.global_names.update(child.names)
            elif isinstance(child, ast.Nonlocal):
                self.nonlocal_names.update(child.names)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.aliases[root] = root
            elif isinstance(child, ast.ImportFrom):
                # Relative imports keep their dots: they never resolve to torch.
                module = "." * child.level + (child.module or "")
                for alias in child.names:
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                self.parent[child] = owner
                if isinstance(child, ast.ClassDef):
                    self.classes.setdefault(child.name, child)
                elif not isinstance(owner, ast.ClassDef):
                    self.functions.setdefault(child.name, []).append(child)  # not methods
                self._index(child.body, child)
            else:
                for field in BLOCK_FIELDS.get(type(child), ()):
                    self._index(getattr(child, field), owner)

    def may_have_walrus(self, statement: ast.stmt) -> bool:
        """Whether ``statement`` may hold a ``:=`` expression."""
        return self.mentions(statement, ":=")

    def mentions(self, statement: ast.stmt, token: str) -> bool:
        """Whether the lines of ``statement`` hold ``token`` (True when the text is not
        known), so that expressions are searched only in the statements that can matter."""
        if token not in self._lines_with:
            self._lines_with[token] = None if self.text is None else _lines_with(
                self.text, token)
        lines = self._lines_with[token]
        if lines is None:
            return True
        at = bisect.bisect_left(lines, statement.lineno)
        return at < len(lines) and lines[at] <= end_line(statement)

    def qualname(self, node: ast.AST) -> str | None:
        """Fully qualified name of a dotted expression rooted at an import, else None."""
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root not in self.aliases:
            return None
        return f"{self.aliases[root]}.{rest}" if rest else self.aliases[root]

    def local_name_of(self, module: str) -> str | None:
        """The name under which ``module`` is imported here, if it is."""
        if self.aliases.get(module) == module:
            return module
        return next((local for local, q in self.aliases.items() if q == module), None)

    def enclosing_class(self, function: ast.AST) -> ast.ClassDef | None:
        """The class whose body defines ``function`` directly, if any."""
        owner = self.parent.get(function)
        return owner if isinstance(owner, ast.ClassDef) else None

    @cached_property
    def module_classes(self) -> frozenset[ast.ClassDef]:
        """Classes that derive from ``torch.nn.Module``, directly or through this file."""
        found: set[ast.ClassDef] = set()
        changed = True
        while changed:
            changed = False
            for cls in self.classes.values():
                if cls not in found and any(self._is_module_base(b, found) for b in cls.bases):
                    found.add(cls)
                    changed = True
        return frozenset(found)

    def _is_module_base(self, base: ast.expr, found: set[ast.ClassDef]) -> bool:
        qualname = self.qualname(base) or ""
        if qualname.startswith("torch.nn."):
            return True
        return isinstance(base, ast.Name) and self.classes.get(base.id) in found

    @cached_property
    def forward_classes(self) -> frozenset[ast.ClassDef]:
        """nn.Module subclasses, plus classes defining ``forward`` whose bases lead out of
        the file (``class T5Stack(T5PreTrainedModel)`` where ``T5PreTrainedModel``
        derives from an imported ``PreTrainedModel``): most likely modules too."""
        def leaves_file(cls: ast.ClassDef,
                        seen: frozenset[ast.ClassDef] = frozenset()) -> bool:
            for base in cls.bases:
                root = (dotted_name(base) or "").split(".")[0]
                if root in self.aliases:
                    return True
                parent = self.classes.get(root) if isinstance(base, ast.Name) else None
                if parent is not None and parent not in seen and leaves_file(parent,
                                                                             seen | {cls}):
                    return True
            return False

        likely = {cls for cls in self.classes.values()
                  if self.method(cls, "forward") and leaves_file(cls)}
        return frozenset(likely) | self.module_classes

    def is_forward(self, function: ast.AST) -> bool:
        """True for ``forward`` methods of nn.Module subclasses."""
        return (isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                and function.name == "forward"
                and self.enclosing_class(function) in self.forward_classes)

    @cached_property
    def compiled(self) -> frozenset[ast.AST]:
        """Functions that torch.compile traces: decorated, passed to it, or called from them."""
        if not self.may_compile:
            return frozenset()
        roots: list[ast.AST] = [
            f for f in self.parent if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            and any(self._is_compiler(d) for d in f.decorator_list)]
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and self._is_compiler(node.func) and node.args:
                roots += self._compiled_targets(node.args[0])
        seen: set[ast.AST] = set()
        while roots:
            function = roots.pop()
            if function not in seen:
                seen.add(function)
                roots += self._callees(function)
        return frozenset(seen)

    def _is_compiler(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return self.qualname(target) in _COMPILERS

    def _compiled_targets(self, arg: ast.expr) -> list[ast.AST]:
        if isinstance(arg, ast.Lambda):
            return [arg]
        if isinstance(arg, ast.Name):
            if arg.id in self.functions:
                return list(self.functions[arg.id])
            return self._forwards_of(self._classes_bound_to(arg.id))
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
            return self._forwards_of([arg.func.id])
        return []

    def _classes_bound_to(self, name: str) -> list[str]:
        return [node.value.func.id for node in ast.walk(self.tree)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]

    def _forwards_of(self, class_names: list[str]) -> list[ast.AST]:
        return [forward for name in class_names if name in self.classes
                and (forward := self.method(self.classes[name], "forward")) is not None]

    def method(self, cls: ast.ClassDef, name: str) -> Def | None:
        """The method ``name`` defined in the body of ``cls``."""
        return next((f for f in cls.body
                     if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name == name),
                    None)

    def _callees(self, function: ast.AST) -> list[ast.AST]:
        # Functions nested in a traced function, functions of this module it calls by
        # name, methods it calls on self, and submodules of this file it calls.
        cls = self._owning_class(function)
        found: list[ast.AST] = [f for f, owner in self.parent.items() if owner is function]
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name):
                found += self.functions.get(node.func.id, [])
            elif cls is not None and isinstance(node.func, ast.Attribute) and isinstance(
                    node.func.value, ast.Name) and node.func.value.id == "self":
                if method := self.method(cls, node.func.attr):
                    found.append(method)
                found += self._forwards_of(self.self_attribute_classes(cls, node.func.attr))
        return found

    def _owning_class(self, function: ast.AST) -> ast.ClassDef | None:
        node: ast.AST | None = function
        while node is not None and not isinstance(node, ast.ClassDef):
            node = self.parent.get(node)
        return node

    def self_attribute_classes(self, cls: ast.ClassDef, attr: str) -> list[str]:
        """Names of this file's classes instantiated into ``self.<attr>`` in ``cls``."""
        return [value.func.id for target, value, _ in self.self_assignments(cls)
                if target == attr and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name) and value.func.id in self.classes]

    def self_assignments(self, cls: ast.ClassDef) -> list[SelfAssignment]:
        """``(attribute, value, method)`` for every ``self.attribute = value`` in ``cls``."""
        if cls in self._self_assignments:
            return self._self_assignments[cls]
        found: list[SelfAssignment] = []
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in self._assignments_and_registrations(method):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    found += [(t.attr, node.value, method) for t in targets
                              if _is_self_attribute(t)]
                elif isinstance(node, ast.AugAssign) and _is_self_attribute(node.target):
                    found.append((node.target.attr, node, method))
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("register_buffer", "register_parameter")
                      and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant)):
                    found.append((str(node.args[0].value), node.args[1], method))
        self._self_assignments[cls] = found
        return found

    def _assignments_and_registrations(self, method: Def) -> Iterator[ast.AST]:
        # register_buffer(...) calls are expressions: searched only in the statements
        # whose lines mention them (blocks inside are statements of their own).
        for statement in statements(method.body):
            yield statement
            if self.mentions(statement, "register_"):
                for part in ast.iter_child_nodes(statement):
                    if not isinstance(part, ast.stmt | ast.excepthandler | ast.match_case):
                        yield from ast.walk(part)

    def in_scope(self, scope: AbstractSet[str], chain: tuple[ast.AST, ...]) -> bool:
        """Whether a node whose enclosing functions are ``chain`` lies in ``scope``."""
        if any(getattr(f, "name", "").startswith(HELPER_PREFIX) for f in chain):
            return False  # the inserted helpers hold the original code: never rewritten
        if _EVERYWHERE in scope:
            return True
        if _FORWARD in scope and any(self.is_forward(f) for f in chain):
            return True
        if _COMPILED in scope and any(f in self.compiled for f in chain):
            return True
        return any(name in scope and self._in_function_scope_of(name, chain)
                   for name in FUNCTION_SCOPES)

    def _in_function_scope_of(self, name: str, chain: tuple[ast.AST, ...]) -> bool:
        key = (name, chain)
        if key not in self._in_function_scope:
            if name not in self.function_scopes:
                self.function_scopes[name] = self._own_scope(name)
            names = self.function_scopes[name]
            self._in_function_scope[key] = bool(names) and any(
                qualname(chain[:i + 1]) in names for i in range(len(chain)))
        return self._in_function_scope[key]

    def _own_scope(self, name: str) -> frozenset[str]:
        """``traced`` computed from this module alone (no other file known); ``profiled``
        is empty without a profile."""
        if name != Scope.TRACED:
            return frozenset()
        from .callgraph import CallGraph, summarize  # the call graph imports this module

        summary = summarize("<module>", self.text or ast.unparse(self.tree), "__main__")
        return CallGraph([summary]).traced().get("<module>", frozenset()) if summary else (
            frozenset())


def _lines_with(text: str, token: str) -> list[int]:
    """Numbers of the lines holding ``token``, in order."""
    if token not in text:
        return []
    if "\r" in text:  # lines end in \r too: split as ast does
        return [n for n, line in enumerate(split_lines(text), 1) if token in line]
    found: list[int] = []
    line, at = 1, 0
    for position in (m.start() for m in re.finditer(re.escape(token), text)):
        line += text.count("\n", at, position)
        at = position
        if not found or found[-1] != line:
            found.append(line)
    return found


# Statements that neither define, import nor declare anything and hold no block.
_LEAF_STATEMENTS = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return,
                              ast.Raise, ast.Assert, ast.Delete, ast.Pass, ast.Break,
                              ast.Continue})


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body`` and in the blocks nested in it (including function and
    class bodies); expressions are not entered."""
    stack: list[ast.AST] = list(body)  # and except handlers, match cases (hold blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in BLOCK_FIELDS.get(type(node), ()):
            stack += getattr(node, field)


def _is_self_attribute(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self")
