"""The functions of a module that ``torch.compile`` traces, as far as this file shows."""

from __future__ import annotations

import ast
from functools import cached_property

from ...syntax.nodes import descendants
from .classes import ModuleClasses
from .definitions import Definitions
from .imports import Imports
from .text import TextIndex

_COMPILERS = frozenset({"torch.compile", "torch._dynamo.optimize"})
_COMPILER_NAMES = frozenset(name.rsplit(".", 1)[1] for name in _COMPILERS)


class CompiledFunctions:
    """Functions decorated with or passed to a compiler, and what they call in this file."""

    def __init__(self, tree: ast.Module, imports: Imports, definitions: Definitions,
                 classes: ModuleClasses, text: TextIndex):
        self._tree = tree
        self._imports = imports
        self._definitions = definitions
        self._classes = classes
        self._text = text

    @cached_property
    def functions(self) -> frozenset[ast.AST]:
        """Functions that torch.compile traces: decorated, passed to it, or called from them."""
        if not self._text.may_compile:
            return frozenset()
        roots: list[ast.AST] = [
            f for f in self._definitions.parent
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            and any(self._is_compiler(d) for d in f.decorator_list)]
        for node in self._calls_maybe_compiling() if self._text.may_call_compiler else ():
            if isinstance(node, ast.Call) and self._is_compiler(node.func) and node.args:
                roots += self._compiled_targets(node.args[0])
        seen: set[ast.AST] = set()
        while roots:
            function = roots.pop()
            if function not in seen:
                seen.add(function)
                roots += self._callees(function)
        return frozenset(seen)

    def _calls_maybe_compiling(self) -> list[ast.AST]:
        """The nodes of the top-level statements whose lines name a compiler: its own name
        (``compile``, ``optimize``, the last part of any attribute ``_is_compiler`` takes)
        or a name it is imported as. Most files mentioning ``compile(`` do so in one or two
        statements, not in every model class."""
        words = _COMPILER_NAMES | {local for local, imported in self._imports.aliases.items()
                                   if imported in _COMPILERS}
        return [node for statement in self._tree.body
                if any(self._text.mentions(statement, word) for word in words)
                for node in descendants(statement)]

    def _is_compiler(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        # An attribute chain resolves to its own last name: only ``.compile``/``.optimize``
        # can be a compiler, so the others are not resolved (most calls of a module).
        if isinstance(target, ast.Attribute) and target.attr not in _COMPILER_NAMES:
            return False
        return self._imports.resolve(target) in _COMPILERS

    def _compiled_targets(self, arg: ast.expr) -> list[ast.AST]:
        if isinstance(arg, ast.Lambda):
            return [arg]
        if isinstance(arg, ast.Name):
            if arg.id in self._definitions.functions:
                return list(self._definitions.functions[arg.id])
            return self._forwards_of(self._classes_bound_to(arg.id))
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
            return self._forwards_of([arg.func.id])
        return []

    def _classes_bound_to(self, name: str) -> list[str]:
        return [node.value.func.id for node in ast.walk(self._tree)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]

    def _forwards_of(self, class_names: list[str]) -> list[ast.AST]:
        classes = self._definitions.classes
        return [forward for name in class_names if name in classes
                and (forward := self._definitions.method(classes[name], "forward")) is not None]

    def _callees(self, function: ast.AST) -> list[ast.AST]:
        # Functions nested in a traced function, functions of this module it calls by
        # name, methods it calls on self, and submodules of this file it calls.
        definitions = self._definitions
        cls = definitions.owning_class(function)
        found: list[ast.AST] = [f for f, owner in definitions.parent.items() if owner is function]
        for node in descendants(function):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name):
                found += definitions.functions.get(node.func.id, [])
            elif cls is not None and isinstance(node.func, ast.Attribute) and isinstance(
                    node.func.value, ast.Name) and node.func.value.id == "self":
                if method := definitions.method(cls, node.func.attr):
                    found.append(method)
                found += self._forwards_of(
                    self._classes.self_attribute_classes(cls, node.func.attr))
        return found
