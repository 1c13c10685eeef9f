"""Candidates over the program's interface: an input its ``forward`` (``__init__``, or a
functional program's function) never reads removed with its item of ``get_inputs()``
(``unused_input_candidates``), an output left out of what it returns
(``output_candidates``), a member nothing reads removed (``unused_member_candidates``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

import libcst as cst

from .trees import Replace, definition, parse

_Item = TypeVar("_Item", cst.Param, cst.BaseElement)  # what a comma separates


# -- unused inputs ------------------------------------------------------------------------------

# Builtins that read a function's variables by name: any parameter may be read through them.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})


def _target_class(module: cst.Module) -> cst.ClassDef | None:
    """The program's module: the one top-level class with a ``forward``, or else the one
    such class that no other code of the module names (the others are its submodules)."""
    classes = [s for s in module.body if isinstance(s, cst.ClassDef)
               and definition(s.body, "forward") is not None]
    if len(classes) > 1:
        named = _Names()  # what the rest of the module mentions, not a class's own name
        for statement in module.body:
            if isinstance(statement, cst.ClassDef):
                for part in (*statement.decorators, *statement.bases, *statement.keywords,
                             statement.body):
                    part.visit(named)
            else:
                statement.visit(named)
        classes = [c for c in classes if c.name.value not in named.names]
    return classes[0] if len(classes) == 1 else None


def _target_function(module: cst.Module) -> cst.FunctionDef | None:
    """A functional program's function: the one top-level function besides the input
    providers that no other code of the module names (the others are its helpers)."""
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)
                 and s.name.value not in ("get_inputs", "get_init_inputs")]
    if len(functions) > 1:
        named = _Names()
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef):
                statement.body.visit(named)
            else:
                statement.visit(named)
        functions = [f for f in functions if f.name.value not in named.names]
    return functions[0] if len(functions) == 1 else None


class _Names(cst.CSTVisitor):
    """Every name an expression or statement mentions (not attribute names or keywords):
    more than it reads, which is what leaving a parameter alone needs."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _returned_items(function: cst.FunctionDef | None
                    ) -> tuple[cst.List | cst.Tuple | None, int] | None:
    """The literal list or tuple an input function returns, and how many items it holds:
    ``(None, 0)`` when there is no such function (nothing is passed); None when it returns
    something else, more than once, or with a starred item."""
    if function is None:
        return None, 0
    returns = _Returns()
    function.body.visit(returns)
    if len(returns.found) != 1:
        return None
    value = returns.found[0].value
    if not isinstance(value, cst.List | cst.Tuple) or not all(
            isinstance(e, cst.Element) for e in value.elements):
        return None
    return value, len(value.elements)


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.found.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _dropped(items: Sequence[_Item], index: int) -> list[_Item]:
    """``items`` (elements or parameters) without the one at ``index``; a new last item takes
    the removed one's comma (none, or a trailing one with its layout)."""
    kept = [item for i, item in enumerate(items) if i != index]
    if index == len(items) - 1 and kept:
        kept[-1] = kept[-1].with_changes(comma=items[index].comma)
    return kept


def _input_sites(module: cst.Module
                 ) -> list[dict[int, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]]]:
    """Replacements, one dictionary per candidate: each unread parameter of the target's
    ``forward`` (then ``__init__``) removed with its item of ``get_inputs()`` (then
    ``get_init_inputs()``); for a functional program, of its function and ``get_inputs()``."""
    target = _target_class(module)
    if target is not None:
        signatures = [(definition(target.body, "forward"), "get_inputs", 1),
                      (definition(target.body, "__init__"), "get_init_inputs", 1)]
    else:  # a functional program: its one top-level function, called with get_inputs()
        signatures = [(_target_function(module), "get_inputs", 0)]
    sites = []
    for function, provider, first in signatures:
        returned = _returned_items(definition(module, provider))
        if function is None or returned is None:
            continue
        items, count = returned
        parameters = function.params
        if parameters.posonly_params or isinstance(parameters.star_arg, cst.Param) or (
                not parameters.params):
            continue  # ``*args`` or ``/``: the positions are not the parameters'
        named = _Names()
        function.body.visit(named)
        if named.names & _INTROSPECTION:
            continue
        for index, parameter in enumerate(parameters.params[first:], start=first):
            if parameter.name.value in named.names:
                continue
            given = index - first < count
            if not given and parameter.default is None:
                continue  # a call that cannot have run: left alone
            replacements: dict[int, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]] = {
                id(parameters): parameters.with_changes(
                    params=_dropped(parameters.params, index))}
            if given:
                assert items is not None  # count > 0 only with a returned literal
                elements = _dropped(items.elements, index - first)
                if isinstance(items, cst.Tuple) and not elements and not items.lpar:
                    replacements[id(items)] = items.with_changes(  # ``return ()``
                        elements=elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                else:
                    replacements[id(items)] = items.with_changes(elements=elements)
            sites.append(replacements)
    return sites


def unused_input_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each parameter from ``start`` on of the program's ``forward``
    (then ``__init__``; for a functional program, its function) that its body never reads,
    removed from the signature and from the literal list ``get_inputs()``
    (``get_init_inputs()``) returns, by position."""
    module = parse(text)
    for position, replacements in enumerate(_input_sites(module)):
        if position >= start:
            yield position, module.visit(Replace(replacements)).code


# -- outputs ------------------------------------------------------------------------------------

def _target_callable(module: cst.Module) -> cst.FunctionDef | None:
    """What the oracle calls: the target class's ``forward``, or a functional program's
    function."""
    target = _target_class(module)
    if target is not None:
        return definition(target.body, "forward")
    return _target_function(module)


def output_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: the program returning its tuple (or list) without the item at each
    position from ``start`` on (one item left: that item alone). An output the verdict does
    not read (``return None, None, v3`` where only ``v3`` differs) goes; the judge keeps the
    candidate only if the verdict and signature stay."""
    module = parse(text)
    function = _target_callable(module)
    if function is None:
        return
    returns = _Returns()
    function.body.visit(returns)
    if len(returns.found) != 1:
        return
    found = returns.found[0]
    value = found.value
    if not isinstance(value, cst.Tuple | cst.List) or len(value.elements) < 2 or not all(
            isinstance(e, cst.Element) for e in value.elements):
        return
    for index in range(start, len(value.elements)):
        kept = _dropped(value.elements, index)
        single = kept[0].value if len(kept) == 1 else None
        replaced = (found.with_changes(value=single) if single is not None
                    else found.with_changes(value=value.with_changes(elements=kept)))
        yield index, module.visit(Replace({id(found): replaced})).code


# -- unused members -----------------------------------------------------------------------------

# ``self.<method>(...)`` calls that read members without naming them.
_MEMBER_READERS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "children",
    "named_children", "modules", "named_modules", "state_dict", "__dict__", "_parameters",
    "_buffers", "_modules"})


_REGISTERS = frozenset({"register_buffer", "register_parameter", "add_module",
                        "register_module"})


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """``NAME`` for ``self.NAME``."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and (
            node.value.value == "self"):
        return node.attr.value
    return None


def _member_set(small: cst.BaseSmallStatement) -> str | None:
    """The member a small statement of ``__init__`` sets: ``self.NAME = value`` (one target),
    ``self.NAME: T = value``, ``self.register_buffer("NAME", value)`` and the like."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return _self_attribute(small.targets[0].target)
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return _self_attribute(small.target)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _REGISTERS and (
                _self_attribute(call.func) is not None) and call.args and isinstance(
                call.args[0].value, cst.SimpleString) and call.args[0].keyword is None:
            name = call.args[0].value.evaluated_value
            return name if isinstance(name, str) and name.isidentifier() else None
    return None


class _MemberSets(cst.CSTVisitor):
    """The small statements that set each member, anywhere in ``__init__``'s body."""

    def __init__(self) -> None:
        self.found: dict[str, list[cst.BaseSmallStatement]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseSmallStatement):
            name = _member_set(node)
            if name is not None:
                self.found.setdefault(name, []).append(node)
            return False
        return not isinstance(node, cst.FunctionDef | cst.ClassDef | cst.Lambda)


class _Mentions(cst.CSTVisitor):
    """Attribute names and strings mentioned outside some statements, and whether a member
    reader (``self.parameters()``, ``getattr``, ``__dict__``) appears."""

    def __init__(self, skip: set[int]):
        self.skip = skip
        self.attributes: set[str] = set()
        self.strings: set[str] = set()
        self.readers = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        if isinstance(node, cst.Attribute):
            self.attributes.add(node.attr.value)
            self.readers |= node.attr.value in _MEMBER_READERS
        elif isinstance(node, cst.Name):
            self.readers |= node.value in {"getattr", "vars", "hasattr", "delattr"}
        elif isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            self.strings.add(value if isinstance(value, str) else "")
        return True


def _emptied(module: cst.Module, removed: set[int]) -> cst.Module:
    """``module`` without the small statements ``removed``; emptied blocks get ``pass``."""
    return module.visit(_RemoveSmall(removed))


class _RemoveSmall(cst.CSTTransformer):
    def __init__(self, removed: set[int]):
        self.removed = removed

    def leave_SimpleStatementLine(
            self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        kept = [new for old, new in zip(original.body, updated.body, strict=True)
                if id(old) not in self.removed]
        if not kept:
            return cst.RemoveFromParent()
        if len(kept) < len(updated.body):
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(body=kept)
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock
                            ) -> cst.IndentedBlock:
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


def _member_sites(module: cst.Module) -> list[set[int]]:
    """The small statements to remove, one set per candidate: every setting of one member
    of a class, in ``__init__``, whose name nothing else in the module mentions (as an
    attribute or a string) and whose class's methods do not read members without naming
    them."""
    sites: list[set[int]] = []
    for cls in (s for s in module.body if isinstance(s, cst.ClassDef)):
        init = definition(cls.body, "__init__")
        if init is None:
            continue
        sets = _MemberSets()
        init.body.visit(sets)
        for name, statements in sets.found.items():
            mentions = _Mentions({id(s) for s in statements})
            module.visit(mentions)
            if mentions.readers or name in mentions.attributes | mentions.strings:
                continue
            sites.append({id(s) for s in statements})
    return sites


def unused_member_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each member from ``start`` on that a class's ``__init__`` sets
    (``self.NAME = ...``: a parameter, a submodule, a buffer, a plain value; or
    ``self.register_buffer("NAME", ...)``) and nothing else reads, removed."""
    module = parse(text)
    for position, removed in enumerate(_member_sites(module)):
        if position >= start:
            yield position, _emptied(module, removed).code
