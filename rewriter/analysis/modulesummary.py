"""A module reduced to what the call graph (``callgraph.py``) needs: names only.

``summarize`` walks one module's tree once and keeps, for each function, the names and dotted
chains it refers to (loads, calls, objects built, decorators, annotations, ``self``
attributes, the module-level dicts it stores into) and the functions nested in it; for each
class, its bases, methods, the functions listed in its class-level literals and what its
``self`` attributes are built from; the module's top-level bindings (imports, definitions,
registry literals) and its roots (functions compiled in this file). A ``Summary`` is plain
data: computed in parallel worker processes and kept on disk (``running/summaries.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..syntax.nodes import BLOCK_FIELDS, CHILD_FIELDS, NODE_TYPES, descendants
from ..syntax.pattern import dotted_name
from .facts.classes import ModuleClasses
from .facts.compiled import CompiledFunctions
from .facts.definitions import Definitions, definition_qualname
from .facts.imports import Imports
from .facts.index import index_module
from .facts.text import TextIndex

_DEFS = ast.FunctionDef | ast.AsyncFunctionDef
_SELF = ("self", "cls")
# What the summarizer's walk pushes: every node type but the leaves it handles as it meets
# them (names) or that hold nothing it reads (constants).
_PUSHED = NODE_TYPES - {ast.Name, ast.Constant}


@dataclass
class FunctionSummary:
    """What one function refers to, by name."""

    owner: str | None = None  # qualname of the class whose body defines it
    nested: list[str] = field(default_factory=list)  # functions defined directly inside
    decorators: list[str] = field(default_factory=list)  # dotted references
    references: set[str] = field(default_factory=set)  # names and dotted chains it loads
    self_attributes: set[str] = field(default_factory=set)  # self.x / cls.x / super().x
    called: set[str] = field(default_factory=set)  # attribute names it calls
    built: set[str] = field(default_factory=set)  # dotted names it calls (classes: objects)
    annotations: set[str] = field(default_factory=set)  # names in its type annotations
    stores: set[str] = field(default_factory=set)  # module-level names it assigns items of


@dataclass
class ClassSummary:
    """A class's bases, methods, listed functions and what ``self`` attributes hold."""

    bases: list[str] = field(default_factory=list)
    methods: dict[str, list[str]] = field(default_factory=dict)  # name -> qualnames
    listed: list[str] = field(default_factory=list)  # references in class-level literals
    self_values: dict[str, list[str]] = field(default_factory=dict)  # attr -> callee refs


@dataclass
class Summary:
    """One module, reduced to what the call graph needs."""

    name: str
    path: str
    is_package: bool
    # module-level name -> ("import", dotted) | ("function"/"class"/"value", key)
    bindings: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    # key -> (form: "literal" or "call", references)
    values: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    roots: set[str] = field(default_factory=set)


def module_name(path: Path) -> tuple[str, bool]:
    """Dotted module name of ``path`` from its outermost package, and whether it is one."""
    path = path.absolute()
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) or path.stem, is_package


def summarize(path: str, text: str, name: str | None = None) -> Summary | None:
    """The summary of one module's source, or None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    if name is None:
        name, is_package = module_name(Path(path))
    else:
        is_package = path.endswith("__init__.py")
    summary = Summary(name, path, is_package)
    _Summarizer(summary, tree).run()
    if not is_package:
        _drop_unbound(summary)
    # The functions compiled in this module are roots: only the facts that finds them, not
    # a whole ``ModuleFacts``, whose scopes ask this module for ``traced``.
    lines = TextIndex(text)
    if lines.may_compile:
        index = index_module(tree)
        imports = Imports(index.aliases)
        definitions = Definitions(index.parent, index.classes, index.functions)
        compiled = CompiledFunctions(tree, imports, definitions,
                                     ModuleClasses(imports, definitions, lines), lines)
        summary.roots |= {definitions.qualname(f) for f in compiled.functions}
    return summary


def _drop_unbound(summary: Summary) -> None:
    """Leave out of each function's references, callees, annotations and stores the names
    whose first part the module does not bind at top level (local variables, builtins:
    three quarters of all references). In a module that is not a package, such a name
    resolves to nothing (``CallGraph._member``), so the solve is the same; the summaries
    are smaller to store and load, and nothing resolves them at every solve."""
    bound = summary.bindings
    for function in summary.functions.values():
        function.references = {r for r in function.references if r.partition(".")[0] in bound}
        function.built = {r for r in function.built if r.partition(".")[0] in bound}
        function.annotations = {r for r in function.annotations
                                if r.partition(".")[0] in bound}
        function.stores = {r for r in function.stores if r in bound}


class _Summarizer:
    """Fills a ``Summary`` from one module's tree."""

    def __init__(self, summary: Summary, tree: ast.Module):
        self.summary, self.tree = summary, tree
        self.values = 0

    def run(self) -> None:
        self._visit(self.tree, (), top=True)

    def _absolute(self, level: int, module: str | None) -> str:
        if not level:
            return module or ""
        parts = self.summary.name.split(".")
        keep = len(parts) - level + (1 if self.summary.is_package else 0)
        base = ".".join(parts[:max(keep, 0)])
        return f"{base}.{module}" if module and base else (module or base)

    def _bind(self, name: str, binding: tuple[str, str]) -> None:
        self.summary.bindings.setdefault(name, []).append(binding)

    def _visit(self, node: ast.AST, chain: tuple[ast.AST, ...], top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                continue
            if isinstance(child, _DEFS):
                self._function(child, chain)
            elif isinstance(child, ast.ClassDef):
                self._class(child, chain)
            elif top:
                self._statement(child)
                self._visit(child, chain, top)

    def _statement(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind(alias.asname, ("import", alias.name))
                else:
                    root = alias.name.split(".")[0]
                    self._bind(root, ("import", root))
        elif isinstance(node, ast.ImportFrom):
            base = self._absolute(node.level, node.module)
            for alias in node.names:
                if alias.name != "*":
                    self._bind(alias.asname or alias.name,
                               ("import", f"{base}.{alias.name}" if base else alias.name))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names:
                key = self._value(node.value)
                for name in names:
                    self._bind(name, ("value", key))

    def _value(self, value: ast.expr) -> str:
        key = str(self.values)
        self.values += 1
        if isinstance(value, ast.Call):
            callee = dotted_name(value.func)
            self.summary.values[key] = ("call", [callee] if callee else [])
        else:
            self.summary.values[key] = ("literal", _listed(value))
        return key

    def _function(self, function: ast.FunctionDef | ast.AsyncFunctionDef,
                  chain: tuple[ast.AST, ...]) -> None:
        inner = chain + (function,)
        name = definition_qualname(inner)
        owner = chain[-1] if chain else None
        summary = FunctionSummary(
            owner=definition_qualname(chain) if isinstance(owner, ast.ClassDef) else None)
        self.summary.functions[name] = summary
        if owner is None:
            self._bind(function.name, ("function", name))
        elif not isinstance(owner, ast.ClassDef):
            self.summary.functions[definition_qualname(chain)].nested.append(name)
        elif function.name == "forward":
            self.summary.roots.add(name)
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (reference := dotted_name(target)) is not None:
                summary.decorators.append(reference)
        cls = self.summary.classes.get(definition_qualname(chain)) if isinstance(
            owner, ast.ClassDef) else None
        self._body(function, summary, cls)
        for child in _direct_defs(function):
            if isinstance(child, ast.ClassDef):
                self._class(child, inner)
            else:
                self._function(child, inner)

    def _body(self, function: ast.AST, summary: FunctionSummary,
              cls: ClassSummary | None = None) -> None:
        """What ``function`` calls, builds, reads and stores; for a method (``cls``), also
        what it assigns to ``self.<name>`` from a call (the class's ``self_values``)."""
        if isinstance(function, _DEFS):
            arguments = function.args
            annotated = [a.annotation for a in arguments.posonlyargs + arguments.args
                         + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg]
                         if a is not None and a.annotation is not None]
            returns = [] if function.returns is None else [function.returns]
            for annotation in annotated + returns:
                summary.annotations |= _references_in(annotation)
        # Dispatched on the exact node type (ast's node classes are never subclassed in a
        # parsed tree): this loop sees every node of every file the call graph reads. Names
        # and constants (nearly half of all nodes, and leaves) are handled as they are met
        # instead of pushed; the other nodes are popped in ``descendants``' order.
        references = summary.references
        stack: list[ast.AST] = [function]
        while stack:
            node = stack.pop()
            if type(node) is ast.Attribute:
                if type(node.ctx) is ast.Load:
                    self._attribute(node, summary)
            elif type(node) is ast.Call:
                self._call(node, summary)
            elif type(node) is ast.Assign or type(node) is ast.AnnAssign:
                self._assignment(node, summary, cls)
            for name in CHILD_FIELDS[type(node)]:
                value = getattr(node, name)
                if type(value) is list:
                    for child in value:
                        if type(child) is ast.Name:
                            if type(child.ctx) is ast.Load:
                                references.add(child.id)
                        elif type(child) in _PUSHED:
                            stack.append(child)
                elif type(value) is ast.Name:
                    if type(value.ctx) is ast.Load:
                        references.add(value.id)
                elif type(value) in _PUSHED:
                    stack.append(value)

    @staticmethod
    def _call(node: ast.Call, summary: FunctionSummary) -> None:
        """A call: of a method by name (``called``), of a dotted callee (``built``)."""
        if type(node.func) is ast.Attribute:
            if not node.func.attr.startswith("__"):  # super().__init__(): not a call
                summary.called.add(node.func.attr)   # on arbitrary objects
        if (callee := dotted_name(node.func)) is not None:
            summary.built.add(callee)

    @staticmethod
    def _attribute(node: ast.Attribute, summary: FunctionSummary) -> None:
        """A read ``base.name``: of ``self``/``super()``, or a dotted reference."""
        base = node.value
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and (
                base.func.id == "super"):
            summary.self_attributes.add(node.attr)
        elif isinstance(base, ast.Name) and base.id in _SELF:
            summary.self_attributes.add(node.attr)
        elif (reference := dotted_name(node)) is not None:
            summary.references.add(reference)

    @staticmethod
    def _assignment(node: ast.Assign | ast.AnnAssign, summary: FunctionSummary,
                    cls: ClassSummary | None) -> None:
        """``name[...] = ...`` stores into ``name``; in a method, ``self.x = f(...)``."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    summary.stores.add(target.value.id)
        if cls is not None and isinstance(node.value, ast.Call):
            _self_values(cls, node, node.value)

    def _class(self, cls: ast.ClassDef, chain: tuple[ast.AST, ...]) -> None:
        inner = chain + (cls,)
        name = definition_qualname(inner)
        summary = ClassSummary(bases=[b for b in map(dotted_name, cls.bases) if b])
        self.summary.classes[name] = summary
        if not chain:
            self._bind(cls.name, ("class", name))
        for statement in cls.body:
            if isinstance(statement, _DEFS):
                summary.methods.setdefault(statement.name, []).append(
                    definition_qualname(inner + (statement,)))
                self._function(statement, inner)
            elif isinstance(statement, ast.ClassDef):
                self._class(statement, inner)
            elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value:
                summary.listed += _listed(statement.value)


def _self_values(cls: ClassSummary, node: ast.Assign | ast.AnnAssign, value: ast.Call) -> None:
    """Record ``self.<name> = <callee>(...)`` in ``cls.self_values``."""
    callee = dotted_name(value.func)
    if not callee:
        return
    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and (
                target.value.id == "self"):
            cls.self_values.setdefault(target.attr, []).append(callee)


def _references_in(annotation: ast.expr) -> set[str]:
    """Every dotted name in an annotation, its prefixes included (``a.b`` gives ``a`` too).

    Most annotations are a name or a dotted name (``int``, ``torch.Tensor``): answered
    without a walk (about 75,000 annotations in transformers' sources)."""
    parts: list[str] = []
    node: ast.expr = annotation
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return {r for r in map(dotted_name, descendants(annotation)) if r}
    name, found = node.id, {node.id}
    for part in reversed(parts):
        name = f"{name}.{part}"
        found.add(name)
    return found


def _direct_defs(node: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef
                                           | ast.ClassDef]:
    """Functions and classes defined in ``node``'s body, not inside another of them.

    Only blocks of statements are searched (a definition is a statement): not the
    expressions, arguments, imports or patterns around them."""
    stack = _blocks_of(node)
    while stack:
        child = stack.pop()
        if isinstance(child, _DEFS | ast.ClassDef):
            yield child
        else:
            stack += _blocks_of(child)


def _blocks_of(node: ast.AST) -> list[ast.AST]:
    """The statements (and except handlers, match cases) of ``node``'s blocks, in order."""
    return [child for name in BLOCK_FIELDS.get(type(node), ()) for child in getattr(node, name)]


def _listed(value: ast.expr) -> list[str]:
    """References listed in a dict (values), list, tuple or set literal."""
    if isinstance(value, ast.Dict):
        items = list(value.values)  # (a key is None for `**rest`; a value never is)
    elif isinstance(value, ast.List | ast.Tuple | ast.Set):
        items = list(value.elts)
    else:
        return []
    found = []
    for item in items:
        if isinstance(item, ast.Dict | ast.List | ast.Tuple | ast.Set):
            found += _listed(item)
        elif isinstance(item, ast.Call):  # functools.partial(f, ...) and the like
            found += [r for r in map(dotted_name, item.args) if r]
        elif (reference := dotted_name(item)) is not None:
            found.append(reference)
    return found
