"""The one walk over a module that every part of its facts shares.

It enters only blocks of statements (imports, functions, classes, ``global`` and
``nonlocal`` are statements), never expressions, and fills every table at once: the
import aliases, the definitions and their nesting, the names declared global or
nonlocal. The parts (``imports.py``, ``definitions.py``, ``scopes.py``) each keep the
tables they answer from.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...syntax.nodes import BLOCK_FIELDS
from .definitions import Function

# Statements that neither define, import nor declare anything and hold no block.
_LEAF_STATEMENTS = frozenset({ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return,
                              ast.Raise, ast.Assert, ast.Delete, ast.Pass, ast.Break,
                              ast.Continue})


@dataclass(eq=False)
class ModuleIndex:
    """The tables one walk fills (see ``Definitions`` for ``parent``, ``classes`` and
    ``functions``; ``aliases`` maps each imported local name to what it imports)."""

    aliases: dict[str, str] = field(default_factory=dict)
    parent: dict[ast.AST, ast.AST | None] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, list[Function]] = field(default_factory=dict)
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)


def index_module(tree: ast.Module) -> ModuleIndex:
    """Every table of ``tree``, from one walk over its blocks of statements."""
    index = ModuleIndex()
    _index(index, tree.body, None)
    return index


def _index(index: ModuleIndex, body: Sequence[ast.AST], owner: ast.AST | None) -> None:
    for child in body:
        if type(child) in _LEAF_STATEMENTS:
            continue  # most statements: nothing to record, no block inside
        if isinstance(child, ast.Global):
            index.global_names.update(child.names)
        elif isinstance(child, ast.Nonlocal):
            index.nonlocal_names.update(child.names)
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.asname:
                    index.aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    index.aliases[root] = root
        elif isinstance(child, ast.ImportFrom):
            # Relative imports keep their dots: they never resolve to torch.
            module = "." * child.level + (child.module or "")
            for alias in child.names:
                index.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            index.parent[child] = owner
            if isinstance(child, ast.ClassDef):
                index.classes.setdefault(child.name, child)
            elif not isinstance(owner, ast.ClassDef):
                index.functions.setdefault(child.name, []).append(child)  # not methods
            _index(index, child.body, child)
        else:
            for field_name in BLOCK_FIELDS.get(type(child), ()):
                _index(index, getattr(child, field_name), owner)
