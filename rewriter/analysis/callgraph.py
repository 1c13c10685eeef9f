"""Which functions ``torch.compile`` traces: a static call graph across the files of one run.

Dynamo traces everything a compiled function calls, in any module: Hugging Face's attention
layers call ``sdpa_attention_forward`` in another file through a registry dict, their
``forward`` runs inside a decorator's wrapper from ``utils/generic.py``, and the loss comes
from ``LOSS_MAPPING[...]`` through a property. The scope ``traced`` covers:

* roots: ``forward`` methods of classes, and functions compiled in their own file
  (decorated with or passed to ``torch.compile``, see ``facts/compiled.py``);
* functions and classes a reachable function refers to by name, through imports
  (relative or absolute, re-exports and lazy package ``__init__`` files included) and
  attributes of imported modules; ``functools.partial(f, ...)`` refers to ``f`` like any
  other use of the name;
* methods reached through ``self``/``cls``/``super()`` (properties too), looked up along the
  class and its bases across files, and methods of ``self.<attr>`` objects built in the class;
* methods called by name (``obj.update(...)``) on objects of classes the traced code refers
  to, and of their subclasses;
* every function listed in a registry the traced code refers to: a module-level dict (or
  list, tuple) literal, an object whose class holds such literals
  (``ALL_ATTENTION_FUNCTIONS = AttentionInterface()``), or a dict that a decorator fills
  (``@register("x")`` whose body stores the function in a module-level dict);
* the nested functions of reachable functions, and of the decorators applied to them (the
  wrapper that runs in place of the decorated function).

It over-approximates on purpose: the graph-break helpers run the original code eagerly, so
a rewrite in a function that also runs untraced changes nothing there.

Each file is first reduced to a ``Summary`` (names only, picklable, computed in parallel
worker processes, and cached on disk by ``summaries.py``); the reachability is then solved
over the summaries.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
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
# Methods that run when an object is built, called or indexed.
_IMPLICIT = ("__call__", "__getitem__", "forward")
# Methods that run when traced code builds an object.
_CONSTRUCTORS = ("__new__", "__init__", "__post_init__")
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


# A definition found by resolution: (module summary, category, key)
# category is "module", "function", "class" or "value"; key a qualname or value key.
Target = tuple[Summary, str, str]


class CallGraph:
    """Reachability over module summaries."""

    def __init__(self, summaries: Iterable[Summary]):
        self.modules: dict[str, Summary] = {}
        self.by_path: dict[str, Summary] = {}
        for summary in summaries:
            self.modules.setdefault(summary.name, summary)
            self.by_path[summary.path] = summary
        self._bases: dict[tuple[str, str], list[tuple[Summary, str]]] = {}
        self._members: dict[tuple[str, str], list[Target]] = {}
        self._methods: dict[tuple[str, str], dict[str, list[tuple[Summary, str]]]] = {}
        self._resolved: dict[tuple[str, str], list[Target]] = {}
        self._own: dict[tuple[str, str], list[tuple[str, list[tuple[Summary, str]]]]] = {}

    # -- resolution -----------------------------------------------------------

    def _lookup(self, dotted: str, depth: int) -> list[Target]:
        if dotted in self.modules:
            return [(self.modules[dotted], "module", "")]
        parent, _, name = dotted.rpartition(".")
        if parent not in self.modules:
            return []
        return self._member(self.modules[parent], name, depth + 1)

    def _member(self, module: Summary, name: str, depth: int = 0) -> list[Target]:
        key = (module.name, name)
        if key in self._members:
            return self._members[key]
        if depth > 12:
            return []
        self._members[key] = []  # guards against import cycles
        found: list[Target] = []
        bound = module.bindings.get(name)
        if bound is not None:
            for category, target in bound:
                if category == "import":
                    found += self._lookup(target, depth + 1)
                else:
                    found.append((module, category, target))
        elif module.is_package:
            if (sub := self.modules.get(f"{module.name}.{name}")) is not None:
                found = [(sub, "module", "")]
            else:
                # Lazy package __init__ files list names instead of importing them: a
                # submodule defining the name at top level is what it means.
                prefix = module.name + "."
                for sub_name, sub in self.modules.items():
                    if sub_name.startswith(prefix) and "." not in sub_name[len(prefix):]:
                        found += [(sub, category, target) for category, target
                                  in sub.bindings.get(name, []) if category != "import"]
        self._members[key] = found
        return found

    def resolve(self, module: Summary, reference: str) -> list[Target]:
        """Definitions a dotted reference made in ``module`` means (each reference resolved
        once: the members and bases it reads are remembered anyway, so a second resolution
        would read the same)."""
        key = (module.path, reference)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(module, reference)
        return self._resolved[key]

    def _resolve(self, module: Summary, reference: str) -> list[Target]:
        first, *rest = reference.split(".")
        found = self._member(module, first)
        for attribute in rest:
            step: list[Target] = []
            for owner, category, key in found:
                if category == "module":
                    step += self._member(owner, attribute)
                elif category == "class":
                    step += [(m, "function", q) for m, q in self.methods(owner, key, attribute)]
            found = step
        return found

    def bases(self, module: Summary, cls: str) -> list[tuple[Summary, str]]:
        """``cls`` and its bases found in the processed files, nearest first."""
        key = (module.path, cls)
        if key in self._bases:
            return self._bases[key]
        self._bases[key] = [(module, cls)]  # guards against cycles
        order = [(module, cls)]
        for base in module.classes[cls].bases:
            for owner, category, name in self.resolve(module, base):
                if category == "class":
                    order += [pair for pair in self.bases(owner, name) if pair not in order]
        self._bases[key] = order
        return order

    def methods(self, module: Summary, cls: str, name: str) -> list[tuple[Summary, str]]:
        """Methods called ``name`` of ``cls`` and its bases."""
        return self.all_methods(module, cls).get(name, [])

    def all_methods(self, module: Summary, cls: str) -> dict[str, list[tuple[Summary, str]]]:
        """Every method of ``cls`` and its bases, by name."""
        key = (module.path, cls)
        if key not in self._methods:
            found: dict[str, list[tuple[Summary, str]]] = {}
            for owner, klass in self.bases(module, cls):
                for name, methods in self._own_methods(owner, klass):
                    if name in found:
                        found[name] = found[name] + methods
                    else:
                        found[name] = methods  # shared, never changed: every merge copies
            self._methods[key] = found
        return self._methods[key]

    def _own_methods(self, module: Summary, cls: str) -> list[tuple[str, list[tuple[Summary,
                                                                                  str]]]]:
        """The methods ``cls`` defines itself, by name (built once: a base class's methods
        are merged into every subclass's)."""
        key = (module.path, cls)
        if key not in self._own:
            self._own[key] = [(name, [(module, q) for q in qualnames])
                              for name, qualnames in module.classes[cls].methods.items()]
        return self._own[key]

    # -- reachability ---------------------------------------------------------

    def traced(self) -> dict[str, frozenset[str]]:
        """Qualified names of the functions reachable from the roots, by file path."""
        solver = _Solver(self)
        for module in self.by_path.values():
            for root in module.roots:
                solver.reach(module, root)
        solver.run()
        found: dict[str, set[str]] = {}
        for path, name in solver.reached:
            found.setdefault(path, set()).add(name)
        return {path: frozenset(names) for path, names in found.items()}


class _Solver:
    """The reachable functions, grown from the roots to a fixed point."""

    def __init__(self, graph: CallGraph):
        self.graph = graph
        self.reached: set[tuple[str, str]] = set()
        self.todo: list[tuple[Summary, str]] = []
        self.classes: dict[tuple[str, str], Summary] = {}
        self.called: set[str] = set(_IMPLICIT)
        # Methods of the classes used, by name: reached once something calls that name.
        self.waiting: dict[str, list[tuple[Summary, str]]] = {}
        self.values: set[tuple[str, str]] = set()
        self.annotated: set[tuple[str, str]] = set()
        self._registered: dict[tuple[str, str], list[tuple[Summary, str]]] | None = None

    def reach(self, module: Summary, function: str) -> None:
        key = (module.path, function)
        if key not in self.reached and function in module.functions:
            self.reached.add(key)
            self.todo.append((module, function))

    def run(self) -> None:
        while self.todo:
            while self.todo:
                self._scan(*self.todo.pop())
            # An object annotated with a class may be of any subclass.
            for module in self.graph.by_path.values():
                for cls in module.classes:
                    if (module.path, cls) not in self.classes and any(
                            (m.path, c) in self.annotated
                            for m, c in self.graph.bases(module, cls)[1:]):
                        self.use_class(module, cls)

    def use_class(self, module: Summary, cls: str) -> None:
        key = (module.path, cls)
        if key in self.classes:
            return
        self.classes[key] = module
        for name, methods in self.graph.all_methods(module, cls).items():
            if name in self.called:
                for owner, method in methods:
                    self.reach(owner, method)
            else:
                self.waiting.setdefault(name, []).extend(methods)
        for owner, klass in self.graph.bases(module, cls):
            for reference in owner.classes[klass].listed:
                self._enter_all(owner, reference)

    def _scan(self, module: Summary, name: str) -> None:
        function = module.functions[name]
        for inner in function.nested:
            self.reach(module, inner)
        for decorator in function.decorators:
            for owner, category, key in self.graph.resolve(module, decorator):
                if category == "function":  # what runs is the wrapper defined inside
                    for inner in self._all_nested(owner, key):
                        self.reach(owner, inner)
                self._enter(owner, category, key)
        for reference in function.references:
            self._enter_all(module, reference)
        for reference in function.annotations:
            for owner, category, key in self.graph.resolve(module, reference):
                if category == "class":
                    self.annotated.add((owner.path, key))
        for callee in function.built:
            for owner, category, key in self.graph.resolve(module, callee):
                if category == "class":
                    for name in _CONSTRUCTORS:
                        for m, method in self.graph.methods(owner, key, name):
                            self.reach(m, method)
        if function.owner is not None:
            for attribute in function.self_attributes:
                for owner, method in self.graph.methods(module, function.owner, attribute):
                    self.reach(owner, method)
                for owner, klass in self.graph.bases(module, function.owner):
                    for callee in owner.classes[klass].self_values.get(attribute, []):
                        self._enter_all(owner, callee)
        for attribute in function.called - self.called:
            self.called.add(attribute)
            for owner, method in self.waiting.pop(attribute, []):
                self.reach(owner, method)

    def _enter_all(self, module: Summary, reference: str) -> None:
        for owner, category, key in self.graph.resolve(module, reference):
            self._enter(owner, category, key)

    def _enter(self, module: Summary, category: str, key: str) -> None:
        if category == "function":
            self.reach(module, key)
        elif category == "class":
            self.use_class(module, key)
        elif category == "value" and (module.path, key) not in self.values:
            self.values.add((module.path, key))
            value_form, references = module.values[key]
            for reference in references:
                for owner, target_category, target in self.graph.resolve(module, reference):
                    if value_form == "literal" and target_category in ("function", "class"):
                        self._enter(owner, target_category, target)
                    elif value_form == "call" and target_category == "class":
                        self.use_class(owner, target)  # an object: its class's registries
            for owner, function in self.registered.get((module.path, key), []):
                self.reach(owner, function)

    def _all_nested(self, module: Summary, function: str) -> list[str]:
        found, stack = [], list(module.functions[function].nested)
        while stack:
            inner = stack.pop()
            found.append(inner)
            stack += module.functions[inner].nested
        return found

    @property
    def registered(self) -> dict[tuple[str, str], list[tuple[Summary, str]]]:
        """Functions a decorator stores into a module-level dict, by that dict's value:
        ``@register("gelu")`` whose ``register`` (or a function nested in it) does
        ``REGISTRY[name] = function``."""
        if self._registered is not None:
            return self._registered
        stores: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for module in self.graph.by_path.values():
            for name, function in module.functions.items():
                for stored in function.stores:
                    stores.setdefault((module.path, name), []).extend(
                        (module.path, key) for category, key in module.bindings.get(stored, [])
                        if category == "value")
        self._registered = {}
        if not stores:
            return self._registered
        for module in self.graph.by_path.values():
            for name, function in module.functions.items():
                for decorator in function.decorators:
                    for owner, category, key in self.graph.resolve(module, decorator):
                        if category != "function":
                            continue
                        for registering in [key, *self._all_nested(owner, key)]:
                            for value in stores.get((owner.path, registering), []):
                                self._registered.setdefault(value, []).append((module, name))
        return self._registered


# -- profiles: the functions a recorded run saw Dynamo trace ---------------------------------

def read_profile(path: str) -> list[tuple[str, str]]:
    """``(file, qualname)`` entries of a profile: lines ``relative/path.py:qualname``, where
    the path is relative to the folder on ``sys.path`` it was imported from; ``#`` comments."""
    entries = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            file, _, name = line.rpartition(":")
            if file and name:
                entries.append((file.replace("\\", "/"), name))
    return entries


def profiled_functions(paths: list[str], profiles: Iterable[str]) -> dict[str, frozenset[str]]:
    """Qualified names listed in the ``profiles`` for each of ``paths``: an entry matches a
    processed file whose path ends with the entry's relative path."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for profile in profiles:
        for file, name in read_profile(profile):
            by_name.setdefault(file.rsplit("/", 1)[-1], []).append((file, name))
    found: dict[str, set[str]] = {}
    for path in paths:
        normal = Path(path).absolute().as_posix()
        for file, name in by_name.get(normal.rsplit("/", 1)[-1], []):
            if normal == file or normal.endswith("/" + file.lstrip("/")):
                found.setdefault(path, set()).add(name)
    return {path: frozenset(names) for path, names in found.items()}
