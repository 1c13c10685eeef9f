"""What a module defines and where: functions and classes by name, and their nesting.

The tables come from the one indexing walk (``index.py``); this part answers questions
about them (the class whose body defines a function, a class's method by name) and
names a definition the way Python does (``definition_qualname``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
Def = ast.FunctionDef | ast.AsyncFunctionDef


def definition_qualname(chain: Sequence[ast.AST]) -> str:
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


class Definitions:
    """Functions and classes of one module: by name, and each one's enclosing definition."""

    def __init__(self, parent: dict[ast.AST, ast.AST | None],
                 classes: dict[str, ast.ClassDef], functions: dict[str, list[Function]]):
        # ``parent`` maps each function and class to the nearest enclosing one (None at
        # top level); ``classes`` keeps the first class of each name, ``functions`` every
        # function of each name that is not a method.
        self.parent = parent
        self.classes = classes
        self.functions = functions

    def qualname(self, definition: ast.AST) -> str:
        """Python's ``__qualname__`` for a function or class of this module."""
        chain = [definition]
        while (parent := self.parent.get(chain[0])) is not None:
            chain.insert(0, parent)
        return definition_qualname(chain)

    def enclosing_class(self, function: ast.AST) -> ast.ClassDef | None:
        """The class whose body defines ``function`` directly, if any."""
        owner = self.parent.get(function)
        return owner if isinstance(owner, ast.ClassDef) else None

    def owning_class(self, function: ast.AST) -> ast.ClassDef | None:
        """The nearest class enclosing ``function`` at any depth, if any."""
        node: ast.AST | None = function
        while node is not None and not isinstance(node, ast.ClassDef):
            node = self.parent.get(node)
        return node

    @staticmethod
    def method(cls: ast.ClassDef, name: str) -> Def | None:
        """The method ``name`` defined in the body of ``cls``."""
        return next((f for f in cls.body
                     if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name == name),
                    None)
