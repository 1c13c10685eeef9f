"""Proofs about a class's own attributes that several kinds share: ``self.name`` stores, the
class a method belongs to, and whether an attribute is a plain one the class owns (assigned
in its ``__init__``, no property or ``__setattr__`` of its own that a store would run).
"""

from __future__ import annotations

import ast

from . import KindContext


def owner_attribute(node: ast.AST) -> bool:
    """``self.name`` (the method's first parameter is always called self here)."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def enclosing_class(context: KindContext) -> ast.ClassDef | None:
    """The class whose method holds the node (None in a nested function or at top level)."""
    chain = [n for n in context.guards.chain
             if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
    if len(chain) >= 2 and isinstance(chain[-2], ast.ClassDef):
        return chain[-2]
    return None


def owns_plain_attribute(cls: ast.ClassDef, name: str) -> bool:
    """Whether ``name`` is assigned as ``self.name`` in ``cls.__init__`` and ``cls`` defines
    neither ``__setattr__`` nor a class-level member called ``name`` (a property)."""
    members = {m.name for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
    members |= {t.id for m in cls.body if isinstance(m, ast.Assign)
                for t in m.targets if isinstance(t, ast.Name)}
    members |= {m.target.id for m in cls.body if isinstance(m, ast.AnnAssign)
                and m.value is not None and isinstance(m.target, ast.Name)}
    if "__setattr__" in members or name in members:
        return False
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef)
                 and m.name == "__init__"), None)
    return init is not None and any(
        isinstance(n, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Attribute) and t.attr == name and owner_attribute(t)
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        for n in ast.walk(init))
