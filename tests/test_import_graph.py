"""The rewriter's and the oracle's import graphs have no cycle, and each stage imports only
what its package declares.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``
anywhere in a module counts, at module level, inside functions and in ``TYPE_CHECKING``
blocks alike, relative imports resolved. ``from package import name`` imports the submodule
``package.name`` when there is one, else the package itself; ``import a.b`` imports ``a.b``.

Packages. Python runs a package's ``__init__`` before any module inside it, and a module
that imports its own package (``from . import Kind`` in a kind module) uses what that
``__init__`` defines: that edge counts. An ``__init__`` that imports modules of its own
package (to re-export them, as ``facts`` and ``generate`` do, or lazily) is a package's
ordinary business, not a cycle: the edge
from an ``__init__`` to a module inside its package is left out. From outside, though,
importing a package runs its ``__init__``, so an import of a package by a module outside it
also reaches the modules that the ``__init__`` imports of its own package (``callgraph``
importing ``facts`` would reach ``facts.scopes``): a cycle through a re-exporting
``__init__`` is still found.

Layers. Each first-level subpackage of ``rewriter/`` and ``oracle/`` (a stage) says in its
``__init__`` docstring what else it may import, in one sentence (wrapped as needed):
``May import: syntax, analysis.`` (or ``nothing``), naming stages or top-level modules
(``api``, ``cli``) of the same package. A package's own ``__init__`` at the top (the
version) is open to all; what the oracle may use of the rewriter is
``test_repository.py``'s to check.

Helper code. ``rules/helpers/`` holds the code of the helpers that rewrites insert:
modules that import torch, read as text by ``rewriting/helpers.py``. Nothing else imports
them.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rewriter", "oracle")
MAX_MODULES = 15  # per folder, ``__init__.py`` included
HELPER_CODE = "eqrewrite.rules.helpers"
# One declaration, which may wrap onto the lines after it.
_DECLARATION = re.compile(r"^May import: ([^.]+)\.$", re.MULTILINE)

Graph = Mapping[str, Iterable[str]]


# -- reading the graph -------------------------------------------------------------------------

def module_files(root: Path, folders: Iterable[str] = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root/folder`` as ``eqrewrite.<folder>...``: its file and whether
    it is a package's ``__init__``."""
    found = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = ["eqrewrite", *path.relative_to(root).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _known(name: str, modules: Mapping[str, object]) -> str | None:
    """``name`` or its longest prefix that is one of ``modules``."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def imported_from(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` in ``package`` reads (relative ones
    resolved)."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[:len(parts) - node.level + 1] + [node.module or ""]).rstrip(".")


def imports_of(module: str, modules: Mapping[str, tuple[Path, bool]]) -> set[str]:
    """The modules of ``modules`` that ``module`` imports, anywhere in its source."""
    path, is_package = modules[module]
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {k for alias in node.names if (k := _known(alias.name, modules))}
        elif isinstance(node, ast.ImportFrom):
            base = imported_from(node, package)
            if base not in modules:
                if (known := _known(base, modules)) is not None:
                    found.add(known)
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    found.discard(module)
    return found


def _inside(module: str, package: str) -> bool:
    return module.startswith(package + ".")


def effective_graph(raw: Graph, packages: set[str]) -> dict[str, set[str]]:
    """``raw`` with the rules for packages (see the module docstring): no edge from an
    ``__init__`` into its own package; an import of a package from outside it also reaches
    what its ``__init__`` imports of its own package (and so on, for nested ones)."""
    def reached(importer: str, target: str) -> set[str]:
        found, todo = {target}, [target]
        while todo:
            current = todo.pop()
            if current in packages and not _inside(importer, current):
                for inner in raw.get(current, ()):
                    if _inside(inner, current) and inner not in found:
                        found.add(inner)
                        todo.append(inner)
        return found

    graph: dict[str, set[str]] = {}
    for module, targets in raw.items():
        edges = graph.setdefault(module, set())
        for target in targets:
            if not (module in packages and _inside(target, module)):
                edges |= reached(module, target)
        edges.discard(module)
    return graph


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_files(root)
    raw = {module: imports_of(module, modules) for module in modules}
    return effective_graph(raw, {m for m, (_, is_package) in modules.items() if is_package})


# -- cycles --------------------------------------------------------------------------------------

def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one node, each sorted (Tarjan's
    algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def cycle_through(graph: Graph, component: list[str]) -> list[str]:
    """One shortest cycle through the component's first node, as ``[a, b, ..., a]``."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        for target in sorted(graph.get(node, ())):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target in members and target not in came_from:
                came_from[target] = node
                todo.append(target)
    raise AssertionError(f"{component} is not strongly connected")


def describe(graph: Graph, found: list[list[str]]) -> str:
    return "; ".join(" -> ".join(cycle_through(graph, c)) for c in found)


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    found = cycles(graph)
    assert found == [], f"import cycles: {describe(graph, found)}"


def test_the_graph_sees_every_kind_of_import():
    # Not vacuous: module-level, relative, function-level and TYPE_CHECKING imports, and a
    # submodule imported by name from its package.
    graph = import_graph()
    rewriter = "eqrewrite.rewriter."
    assert f"{rewriter}matching.matcher" in graph[f"{rewriter}rewriting.engine"]
    assert f"{rewriter}running.runner" in graph[f"{rewriter}api"]  # inside a function
    assert f"{rewriter}rewriting.apply" in graph[f"{rewriter}running.runner"]  # TYPE_CHECKING
    assert f"{rewriter}running.report" in graph[f"{rewriter}cli"]  # from .running import report
    assert "eqrewrite.oracle.judging.compare" in graph["eqrewrite.oracle.harness.repro"]


# -- the finder itself, on made-up graphs --------------------------------------------------------

def test_the_cycle_finder_finds_cycles_and_only_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"},
             "g": {"g"}}  # a self-import is no cycle of modules
    assert cycles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert describe(graph, cycles(graph)) == "a -> b -> c -> a; e -> f -> e"
    long = {str(i): {str(i + 1)} for i in range(5000)} | {"5000": {"0"}}  # no recursion limit
    assert [len(c) for c in cycles(long)] == [5001]


def test_the_package_rules_on_a_made_up_graph():
    packages = {"p", "p.sub"}
    # An __init__ importing its own modules, which import it: no cycle.
    assert cycles(effective_graph({"p": {"p.x"}, "p.x": {"p"}}, packages)) == []
    # ... but from outside, importing the package reaches what its __init__ imports.
    raw = {"p": {"p.x"}, "p.x": {"q"}, "q": {"p"}}
    assert cycles(effective_graph(raw, packages)) == [["p.x", "q"]]
    # Nested packages: q -> p -> p.sub -> p.sub.y -> q.
    raw = {"p": {"p.sub"}, "p.sub": {"p.sub.y"}, "p.sub.y": {"q"}, "q": {"p"}}
    assert cycles(effective_graph(raw, packages)) == [["p.sub.y", "q"]]
    # A module importing a sibling that imports it back is a cycle, package or not.
    assert cycles(effective_graph({"p.x": {"p.y"}, "p.y": {"p.x"}}, packages)) == [
        ["p.x", "p.y"]]


def test_imports_are_read_from_the_source(tmp_path):
    package = tmp_path / "rewriter"
    (package / "stage").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "stage/__init__.py": "from .a import A\n",
        "stage/a.py": "A = 1\n",
        "stage/c.py": "from . import A\n",  # its package's __init__, which imports a
        "stage/b.py": ("from typing import TYPE_CHECKING\n"
                       "if TYPE_CHECKING:\n    from ..top import T\n"
                       "def f():\n    from . import a\n    import eqrewrite.rewriter.top\n"),
        "top.py": "from .stage import b\nimport os\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    modules = module_files(tmp_path, ["rewriter"])
    name = "eqrewrite.rewriter"
    assert imports_of(f"{name}.stage.b", modules) == {f"{name}.top", f"{name}.stage.a"}
    assert imports_of(f"{name}.stage", modules) == {f"{name}.stage.a"}
    assert imports_of(f"{name}.stage.c", modules) == {f"{name}.stage"}
    assert imports_of(f"{name}.top", modules) == {f"{name}.stage.b"}
    raw = {m: imports_of(m, modules) for m in modules}
    graph = effective_graph(raw, {name, f"{name}.stage"})
    assert describe(graph, cycles(graph)) == (
        f"{name}.stage.b -> {name}.top -> {name}.stage.b")


# -- helper code -------------------------------------------------------------------------------

def _helper_code(module: str) -> bool:
    return module == HELPER_CODE or _inside(module, HELPER_CODE)


def importers_of_helper_code(graph: Graph) -> list[str]:
    """``a imports b`` for every module ``a`` outside the helper code that imports ``b``
    inside it."""
    return sorted(f"{module} imports {target}" for module, targets in graph.items()
                  if not _helper_code(module) for target in targets if _helper_code(target))


def test_nothing_in_the_packages_imports_the_helper_code():
    # The helper files (rules/helpers/, data beside the packs) import torch; the rewriter
    # reads them as text. The check itself is tested just below.
    assert importers_of_helper_code(import_graph()) == []


def test_the_helper_code_check_finds_an_importer():
    graph = {"eqrewrite.rewriter.rewriting.helpers": {f"{HELPER_CODE}.shared"},
             f"{HELPER_CODE}.defer": {f"{HELPER_CODE}.shared"}}
    assert importers_of_helper_code(graph) == [
        f"eqrewrite.rewriter.rewriting.helpers imports {HELPER_CODE}.shared"]


# -- folders and layers ------------------------------------------------------------------------

def test_no_folder_holds_more_than_15_modules():
    for folder in PACKAGES:
        for init in (ROOT / folder).rglob("__init__.py"):
            directory = init.parent
            count = len(list(directory.glob("*.py")))
            assert count <= MAX_MODULES, f"{directory.relative_to(ROOT)}: {count} modules"


def declarations(root: Path = ROOT) -> dict[str, dict[str, set[str]]]:
    """For each package, its stages and what each declares it may import."""
    found: dict[str, dict[str, set[str]]] = {}
    for folder in PACKAGES:
        for init in sorted((root / folder).glob("*/__init__.py")):
            docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            lines = _DECLARATION.findall(docstring)
            assert len(lines) == 1, f"{init.relative_to(root)}: no 'May import: ...' line"
            names = set() if lines[0] == "nothing" else {
                name.strip() for name in lines[0].split(",")}
            found.setdefault(folder, {})[init.parent.name] = names
    return found


def _part(module: str) -> str | None:
    """The stage (first-level subpackage) or top-level module ``module`` belongs to; None for
    the package's own ``__init__``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


@pytest.mark.parametrize("folder", PACKAGES)
def test_each_stage_imports_only_what_it_declares(folder):
    declared = declarations()[folder]
    modules = module_files(ROOT, [folder])
    tops = {_part(m) for m in modules} - {None}
    for stage, names in declared.items():
        assert names <= tops - {stage}, f"{folder}/{stage} declares unknown {names - tops}"
    bad = []
    for module in modules:
        stage = _part(module)
        if stage not in declared:
            continue  # a top-level module: the command line, the API
        for target in imports_of(module, modules):
            part = _part(target)
            if part is not None and part != stage and part not in declared[stage]:
                bad.append(f"{module} imports {target}")
    assert bad == []
    # The stages' declarations form layers: no stage may (even indirectly) import itself.
    assert cycles({s: names & set(declared) for s, names in declared.items()}) == []


# -- private names ---------------------------------------------------------------------------

def private_imports(root: Path = ROOT, folders: Iterable[str] = PACKAGES) -> list[str]:
    """``from X import _name`` where X lies in another package (folder) than the importing
    module: a private name is its module's, or at most its package's, to use."""
    modules = module_files(root, folders)
    found = []
    for module, (path, is_package) in modules.items():
        package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = imported_from(node, package)
            if not base.startswith("eqrewrite."):
                continue
            known = _known(base, modules)
            owner = known if known is not None and modules[known][1] else (
                (known or base).rpartition(".")[0])
            for alias in node.names:
                name = alias.name
                private = name.startswith("_") and not name.startswith("__")
                if private and f"{base}.{name}" not in modules and owner != package:
                    found.append(f"{module}: from {base} import {name}")
    return sorted(found)


# Left to their owners (the dynamic audit, the rewriter's audit): each to become public
# where it is defined; the list only shrinks.
KNOWN_PRIVATE_IMPORTS: list[str] = []


def test_no_private_name_is_imported_from_another_package():
    assert private_imports() == KNOWN_PRIVATE_IMPORTS


def test_the_private_import_check_finds_them(tmp_path):
    package = tmp_path / "oracle"
    (package / "a").mkdir(parents=True)
    (package / "b").mkdir()
    files = {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
             "a/x.py": "_hidden = 1\n__all__ = []\n",
             "a/y.py": "from .x import _hidden\n",               # same package: fine
             "b/z.py": "from ..a.x import _hidden, __all__\n",   # another package: found
             "top.py": "from .a import x\n"}
    for name, text in files.items():
        (package / name).write_text(text)
    assert private_imports(tmp_path, ["oracle"]) == [
        "eqrewrite.oracle.b.z: from eqrewrite.oracle.a.x import _hidden"]
