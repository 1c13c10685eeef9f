"""The nn.Module classes of a module, their ``forward`` methods and what ``self`` holds."""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator, Mapping
from functools import cached_property
from typing import TypeGuard

from ...syntax.nodes import BLOCK_FIELDS, descendants
from ...syntax.pattern import dotted_name
from .definitions import Def, Definitions
from .imports import Imports
from .text import TextIndex

# ``self.attribute = value`` in a class: (attribute, value, method). The value of ``+=``
# is the whole statement; of ``register_buffer(name, value)``, the value argument.
SelfAssignment = tuple[str, ast.expr | ast.AugAssign, Def]


class ModuleClasses:
    """Which classes of one module are (most likely) nn.Modules, and their attributes."""

    def __init__(self, imports: Imports, definitions: Definitions, text: TextIndex):
        self._imports = imports
        self._definitions = definitions
        self._text = text
        self._self_assignments: dict[ast.ClassDef, list[SelfAssignment]] = {}

    @cached_property
    def module_classes(self) -> frozenset[ast.ClassDef]:
        """Classes that derive from ``torch.nn.Module``, directly or through this file."""
        found: set[ast.ClassDef] = set()
        changed = True
        while changed:
            changed = False
            for cls in self._definitions.classes.values():
                if cls not in found and any(self._is_module_base(b, found) for b in cls.bases):
                    found.add(cls)
                    changed = True
        return frozenset(found)

    def _is_module_base(self, base: ast.expr, found: set[ast.ClassDef]) -> bool:
        if (self._imports.resolve(base) or "").startswith("torch.nn."):
            return True
        return isinstance(base, ast.Name) and self._definitions.classes.get(base.id) in found

    @cached_property
    def forward_classes(self) -> frozenset[ast.ClassDef]:
        """nn.Module subclasses, plus classes defining ``forward`` whose bases lead out of
        the file (``class T5Stack(T5PreTrainedModel)`` where ``T5PreTrainedModel``
        derives from an imported ``PreTrainedModel``): most likely modules too."""
        classes, aliases = self._definitions.classes, self._imports.aliases
        likely = {cls for cls in classes.values()
                  if self._definitions.method(cls, "forward")
                  and _leaves_file(cls, classes, aliases)}
        return frozenset(likely) | self.module_classes

    def is_forward(self, function: ast.AST) -> bool:
        """True for ``forward`` methods of nn.Module subclasses."""
        return (isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                and function.name == "forward"
                and self._definitions.enclosing_class(function) in self.forward_classes)

    def self_attribute_classes(self, cls: ast.ClassDef, attr: str) -> list[str]:
        """Names of this file's classes instantiated into ``self.<attr>`` in ``cls``."""
        classes = self._definitions.classes
        return [value.func.id for target, value, _ in self.self_assignments(cls)
                if target == attr and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name) and value.func.id in classes]

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
            if self._text.mentions(statement, "register_"):
                for part in ast.iter_child_nodes(statement):
                    if not isinstance(part, ast.stmt | ast.excepthandler | ast.match_case):
                        yield from ast.walk(part)


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


def changes_state(function: ast.AST) -> bool:
    """Whether ``function`` may change state beyond its own locals: it assigns to an
    attribute or an item, calls an in-place method (``x.add_(...)``), declares global or
    nonlocal names, or yields."""
    for node in descendants(function):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute | ast.Subscript) for t in targets):
                return True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr.endswith("_") and not node.func.attr.startswith("_")):
            return True
        if isinstance(node, ast.Global | ast.Nonlocal | ast.Yield | ast.YieldFrom):
            return True
    return False


def stores_on_self(function: ast.AST) -> bool:
    """Whether ``function`` stores an attribute of ``self`` anywhere (``self.x = ...``,
    ``self.x += ...``, in an unpacking too) or registers a buffer or parameter: what
    ``self_assignments`` could read from it."""
    return any((isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and _is_self_attribute(node))
               or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr in ("register_buffer", "register_parameter"))
               for node in descendants(function))


def _is_self_attribute(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _leaves_file(cls: ast.ClassDef, classes: Mapping[str, ast.ClassDef],
                 aliases: Container[str], seen: frozenset[ast.ClassDef] = frozenset()) -> bool:
    """Whether a base of ``cls``, or of a base class defined in this file, is imported.

    Not a closure: a closure calling itself is a reference cycle, which would keep the
    file's tree alive until the garbage collector ran."""
    for base in cls.bases:
        root = (dotted_name(base) or "").split(".")[0]
        if root in aliases:
            return True
        parent = classes.get(root) if isinstance(base, ast.Name) else None
        if parent is not None and parent not in seen and _leaves_file(
                parent, classes, aliases, seen | {cls}):
            return True
    return False
