"""Structural rule kinds: rewrites a pattern/rewrite template cannot express.

A kind looks at one ``ast`` node, proves what it needs with the inference, and
proposes a ``Proposal``: a rewrite template (same metavariable syntax as rules)
with bindings to sub-nodes, how much of the tree it replaces, and the helpers it
needs (``helpers.py``). The matcher then applies the shared checks (scope,
suppression comments, comments inside the span) exactly as for template rules.
A YAML rule selects a kind with ``kind:`` and configures it with ``options:``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from ..guards import GuardContext, is_pure
from ..inference import TENSOR


class KindError(ValueError):
    """Bad ``options`` for a kind; the message names the option."""


@dataclass
class Proposal:
    """What a kind wants to do with one node."""

    template: str
    bindings: dict[str, ast.AST | list[ast.AST]]
    level: str = "expression"  # expression | statement | compound
    helpers: frozenset[str] = frozenset()


@dataclass
class KindContext:
    """What a kind may consult about the node it looks at."""

    guards: GuardContext
    text: str
    cache: dict = field(default_factory=dict)

    def kind(self, node: ast.AST) -> str:
        """Inferred kind of ``node``."""
        return self.guards.kind(node)

    def is_tensor(self, node: ast.AST) -> bool:
        """Whether ``node`` is proven a tensor."""
        return self.kind(node) == TENSOR

    def is_pure(self, node: ast.AST) -> bool:
        """Whether evaluating ``node`` has no side effects."""
        return is_pure(self.guards, node)

    @property
    def facts(self):
        """The module's facts (imports, classes, scopes)."""
        return self.guards.inference.facts

    @property
    def function(self) -> ast.AST:
        """The innermost enclosing function (the module at top level)."""
        return self.guards.chain[-1] if self.guards.chain else self.facts.tree

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        """Parent of every node in the enclosing function."""
        found = {}
        for parent in ast.walk(self.function):
            for child in ast.iter_child_nodes(parent):
                found[child] = parent
        return found


class Kind:
    """Base class: subclasses set ``name``, ``node_types``, ``tokens`` and ``propose``."""

    name = ""
    node_types: tuple[type, ...] = ()
    options_schema: dict[str, tuple[str, ...]] = {}  # option -> allowed values

    def __init__(self, options: dict[str, str]):
        for key, value in options.items():
            if key not in self.options_schema:
                raise KindError(f"kind {self.name!r} has no option {key!r} (options: "
                                f"{', '.join(sorted(self.options_schema)) or 'none'})")
            if value not in self.options_schema[key]:
                raise KindError(f"option {key!r} of kind {self.name!r} must be one of "
                                f"{', '.join(self.options_schema[key])}, got {value!r}")
        missing = sorted(set(self.options_schema) - set(options))
        if missing:
            raise KindError(f"kind {self.name!r} needs option {missing[0]!r} (one of "
                            f"{', '.join(self.options_schema[missing[0]])})")
        self.options = options

    def tokens(self) -> frozenset[str]:
        """Strings of which a file must contain at least one for this kind to apply."""
        return frozenset()

    def propose(self, node: ast.AST, context: KindContext) -> Proposal | None:
        """A rewrite of ``node``, or None when it does not apply or cannot be proven safe."""
        raise NotImplementedError


def registry() -> dict[str, type[Kind]]:
    """Every kind by name."""
    from .defer import Defer
    from .guard import Guard
    from .masked import MaskedReduction
    from .scalar import ItemScalar
    from .select import Select

    return {kind.name: kind for kind in (Select, Guard, Defer, ItemScalar, MaskedReduction)}
