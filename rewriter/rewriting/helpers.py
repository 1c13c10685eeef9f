"""The small helpers that graph-break rewrites insert into a module, read from their code.

Rewritten code calls these instead of inlining torch.where/torch.cond/... so that
eager execution stays exactly the original (every helper takes the original path
unless ``torch.compiler.is_compiling()``), while Dynamo, which constant-folds
that test, traces the graph-friendly path. They are inserted once per module,
after its imports, under one marker comment, and import torch under a private
alias so they work whatever the module calls torch.

Their code lives in ``rules/helpers/``, real modules that ruff and mypy check; this module reads
them as text (``importlib.resources``) and never imports them, so the rewriter never imports
torch. How a file splits into helpers, and what each needs, is described in
``rules/helpers/__init__.py``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, NamedTuple

from ..analysis.knowledge import SCRIPTED_EXCEPTIONS
from ..syntax.marks import END_MARKER, MARKER, PREFIX

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

HELPER_PACKAGE = "eqrewrite.rules.helpers"  # the helper files: data beside the rule packs
SHARED = "shared.py"  # the helper file whose imports are the preamble of every helper block
# A trailing mypy ignore on a line of helper code: for mypy only, left out of the text inserted.
_IGNORE = re.compile(r"  # type: ignore\[[a-z-]+(?:, [a-z-]+)*\]$")


class HelperCodeError(ValueError):
    """A helper file that cannot be read as helpers; the message names the file and why."""


class Helper(NamedTuple):
    """One helper: the text inserted (from a blank line, as inserted) and the helpers it
    needs, in the order its code first reads them."""

    source: str
    needs: tuple[str, ...]


def _scripted_raises(indent: str) -> str:
    """One ``if error == 'E': raise E(text)`` per exception TorchScript raises by name."""
    return "".join(f"{indent}if error == {name!r}:\n{indent}    raise {name}(text)\n"
                   for name in SCRIPTED_EXCEPTIONS)


# Comment lines of helper code that the reader replaces (what a file cannot compute).
FILLS: dict[str, Callable[[str], str]] = {"# {SCRIPTED_RAISES}": _scripted_raises}


@cache
def registered() -> dict[str, Helper]:
    """Every helper, by name: those of the shipped helper files."""
    return read_helpers([shipped()])


def shipped() -> Traversable:
    """The folder of the shipped helper files (read as data: nothing imports them)."""
    return files(HELPER_PACKAGE)


@cache
def preamble() -> str:
    """The imports every helper block starts with: those of the shipped ``shared.py``."""
    tree, lines = _parsed(SHARED, shipped().joinpath(SHARED).read_text(encoding="utf-8"))
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "".join(lines[imports[0].lineno - 1:imports[-1].end_lineno])


@cache
def _preamble_names() -> frozenset[str]:
    """The names the preamble binds (``_eqrw_torch``...): no helper defines them."""
    tree = ast.parse(preamble())
    return frozenset(alias.asname or alias.name for node in tree.body
                     if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names)


def read_helpers(folders: Iterable[Traversable]) -> dict[str, Helper]:
    """The helpers of the ``.py`` files of ``folders`` (``__init__.py`` aside), in folder then
    file-name order, with the helpers each needs worked out from the names its code reads.

    Raises ``HelperCodeError`` for a file that is not valid Python or breaks the layout that
    ``rules/helpers/__init__.py`` describes, for a name no file defines, for a name defined
    twice and for helpers that need each other.
    """
    parts = [part for folder in folders
             for entry in sorted(folder.iterdir(), key=lambda e: e.name)
             if entry.name.endswith(".py") and entry.name != "__init__.py"
             for part in _parts_of(f"{folder.name}/{entry.name}",
                                   entry.read_text(encoding="utf-8"))]
    owners: dict[str, _Part] = {}
    for part in parts:
        for name in part.defines:
            if name in owners:
                raise HelperCodeError(f"{part.file}: {name} is defined twice (also in "
                                      f"{owners[name].file})")
            owners[name] = part
    found = {part.name: Helper(part.text, _needs(part, owners)) for part in parts}
    _refuse_cycles(found)
    return found


@dataclass(frozen=True)
class _Part:
    """A helper as its file spells it: the names its code defines and reads."""

    file: str
    name: str
    text: str
    defines: tuple[str, ...]
    reads: tuple[str, ...]  # ``_eqrw_`` names read and not defined here, in reading order


def _parsed(file: str, text: str) -> tuple[ast.Module, list[str]]:
    try:
        return ast.parse(text, filename=file), text.splitlines(keepends=True)
    except SyntaxError as error:
        raise HelperCodeError(f"{file}: not valid Python: {error.msg} (line {error.lineno})"
                              ) from None


def _parts_of(file: str, text: str) -> list[_Part]:
    """The helpers of one file, in file order (see ``rules/helpers/__init__.py``)."""
    tree, lines = _parsed(file, text)
    listed = _listed(file, tree)
    _check_layout(file, tree, listed)
    starts = [_start(node, lines) for node in tree.body if _defined_name(node) in listed]
    parts = []
    for start, end in zip(starts, [*starts[1:], len(lines)]):
        # A statement's ``lineno`` counts from 1: line index ``start`` is lineno start + 1.
        statements = [n for n in tree.body if start < n.lineno <= end]
        defines = tuple(name for n in statements if (name := _defined_name(n)))
        parts.append(_Part(file, defines[0], _text(file, lines[start:end]), defines,
                           _reads(statements, set(defines))))
    return parts


def _listing(node: ast.stmt) -> bool:
    """``__all__ = ...``."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__all__")


def _docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _listed(file: str, tree: ast.Module) -> list[str]:
    """The names of ``__all__``: the helpers rewrites may ask for."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and _listing(node):
            try:
                listed = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(listed, list | tuple) and all(isinstance(n, str) for n in listed):
                return list(listed)
    raise HelperCodeError(f"{file}: no `__all__` listing its helpers as strings")


def _check_layout(file: str, tree: ast.Module, listed: list[str]) -> None:
    """Every name listed is defined here (or, in ``shared.py``, imported: the preamble); every
    top-level definition is named ``_eqrw_...`` and belongs to a helper; above the helpers
    stand only the docstring, ``__all__`` and imports of other helper files (``shared.py``'s
    are the preamble)."""
    shared = file.endswith(f"/{SHARED}")
    imported = {alias.asname or alias.name for node in tree.body
                if isinstance(node, ast.Import) for alias in node.names}
    defined = [name for node in tree.body if (name := _defined_name(node))]
    for name in listed:
        if name not in defined and not (shared and name in imported):
            raise HelperCodeError(f"{file}: `__all__` lists {name}, which it does not define")
    for name in defined:
        if not name.startswith(PREFIX):
            raise HelperCodeError(f"{file}: {name} must start with {PREFIX!r}, as every name "
                                  "a helper adds to a rewritten module")
    if not defined or defined[0] not in listed:
        raise HelperCodeError(f"{file}: the first function or class must be a helper listed "
                              "in `__all__` (one above the first belongs to none)")
    first = next(node.lineno for node in tree.body if _defined_name(node) == defined[0])
    for index, node in enumerate(tree.body):
        _check_statement(file, node, above=node.lineno < first, first=index == 0,
                         shared=shared)


def _check_statement(file: str, node: ast.stmt, above: bool, first: bool, shared: bool
                     ) -> None:
    """One top-level statement: ``above`` the first helper or not, the file's ``first``."""
    where = f"{file}: line {node.lineno}"
    imports = isinstance(node, ast.Import | ast.ImportFrom)
    if not above:
        if imports:
            raise HelperCodeError(f"{where}: imports go above the helpers")
        return
    if not (imports or _listing(node) or (first and _docstring(node))):
        # Inserted with no helper, it would be missing from rewritten modules.
        raise HelperCodeError(f"{where}: above the helpers stand only the docstring, imports "
                              "and `__all__`")
    if not shared and (isinstance(node, ast.Import)
                       or isinstance(node, ast.ImportFrom) and not node.level):
        raise HelperCodeError(f"{where}: a helper file imports only other helper files (the "
                              f"preamble is {SHARED}'s imports)")


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    return None


def _start(node: ast.stmt, lines: list[str]) -> int:
    """The index of a helper's first line: its first decorator, or the comment lines right
    above it."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start


def _text(file: str, lines: list[str]) -> str:
    """A helper's text as inserted: from a blank line, without the two blank lines that
    separate it from the next helper (a further one is its own), fills made and mypy's
    ignores left out."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    extra = max(0, len(lines) - end - 2)
    return "\n" + "".join(_inserted_line(file, line) for line in lines[:end]) + "\n" * extra


def _inserted_line(file: str, line: str) -> str:
    stripped = line.strip()
    if stripped in FILLS:
        return FILLS[stripped](line[:len(line) - len(line.lstrip())])
    if "# type: ignore" in line:
        kept = _IGNORE.sub("", line.rstrip("\n"))
        if "# type: ignore" in kept:
            raise HelperCodeError(f"{file}: a `# type: ignore` that is not `  # type: "
                                  f"ignore[code]` at the end of its line: {stripped}")
        return kept + "\n"
    return line


def _reads(statements: list[ast.stmt], defined: set[str]) -> tuple[str, ...]:
    """The ``_eqrw_`` names ``statements`` read that they do not define, in reading order
    (strings and docstrings aside), the preamble's names left out."""
    names = sorted((n.lineno, n.col_offset, n.id) for statement in statements
                   for n in ast.walk(statement) if isinstance(n, ast.Name)
                   and n.id.startswith(PREFIX))
    skip = defined | _preamble_names()
    return tuple(dict.fromkeys(name for *_, name in names if name not in skip))


def _needs(part: _Part, owners: dict[str, _Part]) -> tuple[str, ...]:
    """The helpers ``part`` needs: the owners of the names it reads, in reading order."""
    needed: dict[str, None] = {}
    for name in part.reads:
        owner = owners.get(name)
        if owner is None:
            raise HelperCodeError(f"{part.file}: {part.name} reads {name}, which no helper "
                                  "file defines")
        needed[owner.name] = None
    return tuple(needed)


def _refuse_cycles(helpers: dict[str, Helper]) -> None:
    """Helpers that need each other could not be inserted dependencies first."""
    done: set[str] = set()
    for name in helpers:
        path, todo = [name], [iter(helpers[name].needs)]
        while todo:
            following = next(todo[-1], None)
            if following is None:
                done.add(path.pop())
                todo.pop()
            elif following in path:
                raise HelperCodeError("helpers need each other: " + " -> ".join(
                    [*path[path.index(following):], following]))
            elif following not in done:
                path.append(following)
                todo.append(iter(helpers[following].needs))


def closure(names: set[str]) -> list[str]:
    """``names`` and every helper they need, dependencies first, in a stable order."""
    helpers = registered()
    ordered: list[str] = []
    for name in sorted(names):
        _add_with_dependencies(name, helpers, ordered)
    return ordered


def _add_with_dependencies(name: str, helpers: dict[str, Helper], ordered: list[str]
                           ) -> None:
    """Append ``name`` to ``ordered`` after the helpers it needs (not a closure calling
    itself: that would be a reference cycle, left for the garbage collector)."""
    for dependency in helpers[name].needs:
        _add_with_dependencies(dependency, helpers, ordered)
    if name not in ordered:
        ordered.append(name)


def source_of(names: list[str], with_preamble: bool) -> str:
    """The code defining ``names``, after the private torch import if asked."""
    helpers = registered()
    return (preamble() if with_preamble else "") + "".join(
        "\n" + helpers[name].source for name in names)


def strip_block(text: str) -> str:
    """``text`` without its helper block (markers included): what rule examples show."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if not starts or not ends:
        return text
    start, end = starts[0], ends[-1] + 1
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    while end < len(lines) and not lines[end].strip():
        end += 1
    return "".join(lines[:start] + lines[end:])
