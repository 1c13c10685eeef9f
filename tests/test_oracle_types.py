"""No untyped dictionary crosses a package boundary of the oracle.

The oracle's packages are its folders (``judging``, ``harness``, ``campaign``, ...) and its
top-level modules (``api``, ``plugin``, ``formats``, ...). What one package hands another
goes through the public functions and methods (no leading underscore, in public classes) of
the modules that the other imports: their annotations, parameters and return, must name a
typed record (a ``TypedDict``, a dataclass) rather than ``dict[str, Any]``, ``Dict[str,
Any]``, ``Mapping[str, Any]``, ``MutableMapping[str, Any]`` or a bare ``dict``, anywhere
inside the annotation (``list[dict[str, Any]] | None`` too), directly or through a
module-level alias (``Record = dict[str, Any]``, imported or not).

Everything is read from the source with ``ast`` (annotations are text here: every oracle
module has ``from __future__ import annotations``), and the import graph the way
``test_import_graph.py`` reads it: an import of a package also reaches the modules its
``__init__`` imports.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from pathlib import Path

from test_import_graph import ROOT, _part, effective_graph, imported_from, imports_of, module_files

_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}
_BARE = {"dict", "Dict"}

# Public annotations that may still say ``dict[str, Any]``, each with its reason: none any
# more (the [tool.eqrewrite.oracle] table is the rewriter's ``TomlTable``, the click flags
# its plugin protocol's ``Flags``). An entry added here needs its reason.
KNOWN_UNTYPED: dict[str, str] = {}


def _name(node: ast.expr) -> str | None:
    """``dict`` for ``dict`` and ``typing.Dict`` alike: the last name of a dotted one."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def untyped(annotation: ast.expr | None, aliases: Collection[str] = ()) -> bool:
    """Whether ``annotation`` holds an untyped dictionary (see the module docstring)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    name = _name(annotation)
    if name is not None:
        return name in _BARE or name in aliases
    if isinstance(annotation, ast.Subscript):
        head = _name(annotation.value)
        key = annotation.slice
        if (head in _MAPPINGS and isinstance(key, ast.Tuple) and len(key.elts) == 2
                and _name(key.elts[0]) == "str" and _name(key.elts[1]) == "Any"):
            return True
        return untyped(annotation.slice, aliases)
    return any(untyped(child, aliases) for child in ast.iter_child_nodes(annotation)
               if isinstance(child, ast.expr))


def _aliases(tree: ast.Module) -> set[str]:
    """The module-level names bound to an untyped dictionary (``Record = dict[str, Any]``)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        # An annotation's expression: not a call (a functional TypedDict is a record).
        if (isinstance(target, ast.Name) and isinstance(value, ast.Subscript | ast.BinOp)
                and untyped(value)):
            found.add(target.id)
    return found


def _functions(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.FunctionDef
                                                                     | ast.AsyncFunctionDef]]:
    """The public functions of ``body``, and the public methods of its public classes,
    as ``prefix.name`` (conditional definitions at that level included)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_"):
                yield f"{prefix}.{node.name}", node
        elif isinstance(node, ast.ClassDef):
            if not node.name.startswith("_"):
                yield from _functions(node.body, f"{prefix}.{node.name}")
        elif isinstance(node, ast.If | ast.Try):
            yield from _functions(node.body + node.orelse, prefix)


def offenders(root: Path = ROOT) -> list[str]:
    """``module.function: parameter`` (or ``: return``) for each untyped dictionary in the
    annotations of a public function of an oracle module imported from another package."""
    modules = module_files(root, ["oracle"])
    raw = {module: imports_of(module, modules) for module in modules}
    graph = effective_graph(raw, {m for m, (_, is_package) in modules.items() if is_package})
    crossing = {target for module, targets in graph.items() for target in targets
                if _part(target) is not None and _part(target) != _part(module)}
    trees = {module: ast.parse(path.read_text(encoding="utf-8"))
             for module, (path, _) in modules.items()}
    defined = {module: _aliases(tree) for module, tree in trees.items()}
    found = []
    for module in sorted(crossing):
        path, is_package = modules[module]
        package = module if is_package else module.rpartition(".")[0]
        aliases = set(defined[module])
        for node in ast.walk(trees[module]):  # aliases imported from other oracle modules
            if isinstance(node, ast.ImportFrom):
                base = imported_from(node, package)
                aliases |= {alias.asname or alias.name for alias in node.names
                            if alias.name in defined.get(base, ())}
        short = module.removeprefix("eqrewrite.oracle.")
        for name, function in _functions(trees[module].body, short):
            arguments = function.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            found += [f"{name}: {a.arg}" for a in every if untyped(a.annotation, aliases)]
            if untyped(function.returns, aliases):
                found.append(f"{name}: return")
    return found


def test_no_untyped_dictionary_crosses_an_oracle_package():
    found = offenders()
    new = [f for f in found if f not in KNOWN_UNTYPED]
    assert new == [], f"{len(new)} untyped dictionaries cross a package:\n" + "\n".join(new)
    assert sorted(set(KNOWN_UNTYPED) - set(found)) == [], "fixed: remove them from the list"


def test_the_check_finds_them(tmp_path):
    package = tmp_path / "oracle"
    for folder in ("a", "b"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    files = {
        "a/x.py": ("from typing import Any, Mapping\nimport typing\n"
                   "Blob = dict[str, Any]\n"
                   "def f(a: dict[str, Any], b: 'Mapping[str, Any] | None', c: int,\n"
                   "      *d: dict, **e: list[typing.Dict[str, Any]]) -> Blob: ...\n"
                   "def g(a: dict[str, int], b: Mapping[str, object]) -> None: ...\n"
                   "def _private(a: dict) -> dict: ...\n"
                   "class Public:\n"
                   "    def method(self, a: MutableMapping[str, Any]) -> None: ...\n"
                   "    def _hidden(self) -> dict: ...\n"
                   "class _Private:\n"
                   "    def method(self) -> dict: ...\n"),
        "a/y.py": "from .x import Blob\ndef h() -> list[Blob]: ...\n",
        "a/z.py": "def f() -> dict: ...\n",  # imported from its own package only
        "a/w.py": "from .x import f\nfrom .y import h\nfrom .z import f\n",
        "b/user.py": "from ..a import x\nfrom ..a.y import h\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    assert offenders(tmp_path) == [
        "a.x.f: a", "a.x.f: b", "a.x.f: d", "a.x.f: e", "a.x.f: return",
        "a.x.Public.method: a", "a.y.h: return"]
