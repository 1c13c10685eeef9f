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

Each file is first reduced to a ``Summary`` (``modulesummary.py``: names only, picklable,
computed in parallel worker processes, and cached on disk by ``running/summaries.py``); the
reachability is then solved over the summaries, here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .modulesummary import Summary

# Methods that run when an object is built, called or indexed.
_IMPLICIT = ("__call__", "__getitem__", "forward")
# Methods that run when traced code builds an object.
_CONSTRUCTORS = ("__new__", "__init__", "__post_init__")


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
