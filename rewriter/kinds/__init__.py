"""Structural rule kinds: rewrites a pattern/rewrite template cannot express.

A kind looks at one ``ast`` node, proves what it needs with the inference, and
proposes a ``Proposal``: a rewrite template (same metavariable syntax as rules)
with bindings to sub-nodes, how much of the tree it replaces, and the helpers it
needs (by name: their code is ``rules/helpers/``). The matcher then applies the shared
checks (scope, suppression comments, comments inside the span) exactly as for template rules.
A YAML rule selects a kind with ``kind:`` and configures it with ``options:``.

Kinds register themselves: every module of this package and of its subpackages (one per
pack: ``equivalence/``, ``graphbreaks/``) is imported when the registry is first asked for,
and the kinds it defines are collected (``discover``), so a new kind is one new module, named
after its kind (the helpers its rewrites call go in a helper file of the same name). The
modules of this package itself hold the proofs several kinds share (no kind):
``spelling.py`` (how torch is spelled, literals, repeatable operands), ``conditions.py``
(tensor conditions and the scalars they read), ``values.py`` (what a rewrite may move, keep or
copy), ``attributes.py`` (a class's own attributes: who stores them) and ``rowwise.py``
(computations row by row, for the mixture-of-experts kinds).

May import: syntax, analysis.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from types import ModuleType
from typing import TypeVar, cast

from ..analysis.facts import ModuleFacts
from ..analysis.guards import GuardContext, is_pure
from ..analysis.inference import TENSOR
from ..syntax.enums import Level, ValueKind
from ..syntax.nodes import children, walk_in_order
from ..syntax.pattern import Bindings, NodeKey

T = TypeVar("T")


class KindError(ValueError):
    """Bad ``options`` for a kind; the message names the option."""


@dataclass
class Proposal:
    """What a kind wants to do with one node."""

    template: str
    bindings: Bindings
    level: Level = Level.EXPRESSION
    helpers: frozenset[str] = frozenset()
    # The node replaced, when not the node the kind was offered (a test of the ``if``).
    target: ast.expr | ast.stmt | None = None
    # A node whose edit by the same rule this one needs: without it, this one is dropped.
    requires: ast.expr | ast.stmt | None = None
    # The edit leaves the node offered no graph break (a folded ``elif`` reads a Python
    # int): the notes other rules leave on that node no longer hold.
    settles: bool = False


@dataclass
class KindContext:
    """What a kind may consult about the node it looks at."""

    guards: GuardContext
    # The same place seen with unannotated parameters assumed to be tensors (see assuming).
    assumed: Callable[[], GuardContext] | None = None
    # Why a recognised graph break could not be rewritten (reported to the user).
    notes: list[str] | None = None

    def note(self, reason: str) -> None:
        """Record why this node, a graph break the kind recognises, stays as it is."""
        if self.notes is not None and reason not in self.notes:
            self.notes.append(reason)

    def assuming(self) -> KindContext | None:
        """This context with every unannotated parameter without a default taken as a
        tensor. A rewrite proven only under that assumption must check at run time that
        ``parameters_behind`` its operands are tensors before taking the tensor path."""
        return None if self.assumed is None else KindContext(self.assumed())

    def assumable_parameters(self) -> tuple[str, ...]:
        """The enclosing function's unannotated parameters without a default (not ``self``
        or ``cls``), in order of declaration: those ``assuming`` takes as tensors, and the
        only ones ``parameters_behind`` can name."""
        function = self.function
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            return ()
        found = _ASSUMABLE.get(function)
        if found is None:  # asked at every `if` (select): worked out once per function
            arguments = function.args
            positional = arguments.posonlyargs + arguments.args
            without_default = positional[:len(positional) - len(arguments.defaults)] + [
                a for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is None]
            found = _ASSUMABLE[function] = tuple(
                a.arg for a in without_default
                if a.annotation is None and a.arg not in ("self", "cls"))
        return found

    def parameters_behind(self, nodes: list[ast.AST]) -> list[str]:
        """Unannotated parameters (no default) of the enclosing function whose values reach
        ``nodes``, directly or through local assignments, in order of declaration."""
        candidates = self.assumable_parameters()
        if not candidates:
            return []
        function = self.function
        sources: dict[str, set[str]] = {}
        for targets, value in _bindings_in(function):
            used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            for target in targets:
                for bound in ast.walk(target):
                    if isinstance(bound, ast.Name):
                        sources.setdefault(bound.id, set()).update(used)
        reached: set[str] = set()
        todo = [n.id for node in nodes for n in ast.walk(node)
                                if isinstance(n, ast.Name)]
        while todo:
            name = todo.pop()
            if name not in reached:
                reached.add(name)
                todo += sources.get(name, ())
        return [name for name in candidates if name in reached]

    def value_kind(self, node: ast.AST) -> ValueKind:
        """What ``node`` is inferred to hold (its ``ValueKind``)."""
        return self.guards.value_kind(node)

    def is_tensor(self, node: ast.AST) -> bool:
        """Whether ``node`` is proven a tensor."""
        return self.value_kind(node) == TENSOR

    def is_pure(self, node: ast.AST) -> bool:
        """Whether evaluating ``node`` has no side effects."""
        return is_pure(self.guards, node)

    @property
    def facts(self) -> ModuleFacts:
        """The module's facts (imports, classes, scopes)."""
        return self.guards.inference.facts

    @property
    def function(self) -> ast.AST:
        """The innermost enclosing function (the module at top level)."""
        functions = [f for f in self.guards.chain
                     if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)]
        return functions[-1] if functions else self.facts.tree

    def function_mentions(self, *words: str) -> bool:
        """Whether the enclosing function's lines hold one of ``words`` (a substring test;
        True at module level and in a lambda): a cheap refusal before a question that would
        walk the whole function, such as whether a local holds ``.item()``."""
        function = self.function
        return not isinstance(function, ast.stmt) or any(
            self.facts.text.mentions(function, word) for word in words)

    def walk(self) -> list[ast.AST]:
        """Every node of the enclosing function in ``ast.walk``'s order, walked once per
        function and shared by every rule and node there (see ``_walked``)."""
        return _walked(self.function)

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        """Parent of every node in the enclosing function (computed once per function)."""
        return _parents_of(self.function)

    def inside(self, node: ast.AST, statements: Iterable[ast.AST]) -> bool:
        """Whether ``node`` of the enclosing function lies in one of ``statements``."""
        wanted = {id(s) for s in statements}
        current: ast.AST | None = node
        while current is not None and id(current) not in wanted:
            current = self.parents.get(current)
        return current is not None

    def module_walk(self) -> list[ast.AST]:
        """Every node of the module, walked once per matcher run (a proof about every use
        of a name in the file: ``numpy_flag``)."""
        return _walked(self.facts.tree)

    def module_parents(self) -> dict[ast.AST, ast.AST]:
        """Parent of every node of the module, computed once per matcher run."""
        return _parents_of(self.facts.tree)

    def module_memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per module, key and matcher run: a table a kind derives
        from the whole module (dropped with the module's other tables, ``forget_module``,
        since its body may be spliced between runs)."""
        memo = _MEMOS.setdefault(self.facts.tree, {})
        if key not in memo:
            memo[key] = compute()
        return cast(T, memo[key])

    def assignments(self, name: str) -> list[ast.Assign]:
        """The statements ``... = name = ... = value`` of the enclosing function that bind
        ``name`` as one of their whole targets, in ``walk()`` order; indexed once per
        function (cheaper than ``parents`` for this one question)."""
        return _assignments_of(self.function).get(name, [])

    def binders(self, name: str) -> list[ast.AST]:
        """Every node of the enclosing function that binds ``name`` (assignment targets,
        loop variables, parameters, imports, nested definitions, global/nonlocal), in
        ``walk()`` order; indexed once per function."""
        return _binders_of(self.function).get(name, [])


# Kept per function node, weakly: a function's nodes never change while it is matched, and a
# later round parses a new tree (the old one goes). A module's body may be spliced between
# rounds (incremental.py), so its top-level code is kept only until the next matcher run
# starts (``forget_module``).
_WALKS: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()
_PARENTS: weakref.WeakKeyDictionary[ast.AST, dict[ast.AST, ast.AST]] = (
    weakref.WeakKeyDictionary())
_BINDERS: weakref.WeakKeyDictionary[ast.AST, dict[str, list[ast.AST]]] = (
    weakref.WeakKeyDictionary())
_ASSIGNMENTS: weakref.WeakKeyDictionary[ast.AST, dict[str, list[ast.Assign]]] = (
    weakref.WeakKeyDictionary())
_ASSUMABLE: weakref.WeakKeyDictionary[ast.AST, tuple[str, ...]] = weakref.WeakKeyDictionary()
_MEMOS: weakref.WeakKeyDictionary[ast.AST, dict[str, object]] = weakref.WeakKeyDictionary()


def forget_module(tree: ast.Module) -> None:
    """Drop what is kept of ``tree``'s top-level code: a matcher run over it starts (its
    body may have been spliced since the last)."""
    for kept in (_WALKS, _PARENTS, _BINDERS, _ASSIGNMENTS, _MEMOS):
        kept.pop(tree, None)


def _walked(function: ast.AST) -> list[ast.AST]:
    nodes = _WALKS.get(function)
    if nodes is None:
        nodes = _WALKS[function] = walk_in_order(function)
    return nodes


def _parents_of(function: ast.AST) -> dict[ast.AST, ast.AST]:
    found = _PARENTS.get(function)
    if found is None:
        found = _PARENTS[function] = {}
        for parent in _walked(function):
            for child in children(parent):
                found[child] = parent
    return found


def _binders_of(function: ast.AST) -> dict[str, list[ast.AST]]:
    found = _BINDERS.get(function)
    if found is None:
        found = _BINDERS[function] = {}
        for node in _walked(function):
            for name in _names_bound_by(node):
                found.setdefault(name, []).append(node)
    return found


def _assignments_of(function: ast.AST) -> dict[str, list[ast.Assign]]:
    found = _ASSIGNMENTS.get(function)
    if found is None:
        found = _ASSIGNMENTS[function] = {}
        for node in _walked(function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound = found.setdefault(target.id, [])
                        if not bound or bound[-1] is not node:  # `a = a = v`: listed once
                            bound.append(node)
    return found


def _names_bound_by(node: ast.AST) -> list[str]:
    """The names one node binds in its scope's walk (see ``KindContext.binders``)."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.alias):
        return [node.asname or node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []


def _bindings_in(function: ast.AST) -> list[tuple[list[ast.expr], ast.expr]]:
    """``(targets, value)`` for every way ``function`` binds names from a value: assignments,
    ``for`` loops and comprehensions (from what they iterate), ``with ... as`` and ``:=``.
    A local bound any of these ways carries the parameters its value reads."""
    found: list[tuple[list[ast.expr], ast.expr]] = []
    for node in _walked(function):
        if isinstance(node, ast.Assign):
            found.append((node.targets, node.value))
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) and node.value:
            found.append(([node.target], node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            found.append(([node.target], node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found.append(([node.optional_vars], node.context_expr))
    return found


class Kind:
    """Base class: subclasses set ``name``, ``node_types``, ``tokens`` and ``propose``."""

    name = ""
    node_types: tuple[type[ast.AST], ...] = ()
    # Kinds on operator nodes (BinOp...) also list their (type, operator type) keys.
    node_keys: tuple[NodeKey, ...] = ()
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
    """Every kind by name, from the modules of this package (see ``discover``)."""
    return _discovered(__name__)


@cache
def _discovered(package: str) -> dict[str, type[Kind]]:
    return discover(package)


def discover(package: str) -> dict[str, type[Kind]]:
    """The kinds of every module of ``package`` and of its subpackages, in module-name order.

    A kind module registers itself by being there: each ``Kind`` subclass it defines with a
    ``name`` is a kind. Modules without one (shared proofs such as ``spelling.py``) contribute
    nothing. Importing a kind module must stay cheap: it never imports torch, and the
    rewriter imports them only when packs load.
    """
    kinds: dict[str, type[Kind]] = {}
    for module in _modules(package):
        for kind in _kinds_defined_in(module):
            if kind.name in kinds:
                raise ImportError(f"kind {kind.name!r} is defined twice: by "
                                  f"{kinds[kind.name].__module__} and {module.__name__}")
            kinds[kind.name] = kind
    return kinds


def _modules(package: str) -> Iterator[ModuleType]:
    """The modules of ``package`` in name order, each subpackage's (one per pack:
    ``equivalence``, ``graphbreaks``) in its place."""
    root = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        yield module
        if info.ispkg:
            yield from _modules(module.__name__)


def _kinds_defined_in(module: ModuleType) -> list[type[Kind]]:
    """Named ``Kind`` subclasses defined (not merely imported) in ``module``, in source order."""
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Kind) and value.name
            and value.__module__ == module.__name__]
