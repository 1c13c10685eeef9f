"""Candidates over statements: a subset of one statement list kept (``keep_statements``, for
delta debugging), a compound statement replaced by one of its blocks (``hoist_candidates``)
or by a graph break and one of its blocks (``break_candidates``), an assignment inlined
(``inline_candidates``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import libcst as cst
from libcst.metadata import ExpressionContext

from .trees import (
    BUILTINS,
    Replace,
    analysed,
    flattened,
    in_place_of,
    module_names,
    parse,
    statement_lists,
)


def body_lengths(text: str) -> list[int]:
    """How many statements each statement list of ``text`` holds, in pre-order."""
    return [len(body.body) for body in analysed(text)[2]]


def keep_statements(text: str, body: int, keep: frozenset[int]) -> str:
    """``text`` with only the statements ``keep`` (indices) of statement list ``body``; names
    that removed statements bound are replaced in later statements of the list by the first
    value each read. An emptied block gets ``pass``."""
    module, contexts, bodies = analysed(text)
    target = bodies[body]
    modules = module_names(module)
    statements: list[cst.BaseStatement] = []
    mapping: dict[str, cst.BaseExpression] = {}
    for index, statement in enumerate(target.body):
        if mapping:
            renamed = statement.visit(_Rename(mapping, contexts))
            assert isinstance(renamed, cst.BaseStatement)  # _Rename only replaces names
            statement = renamed
        bound = _bound_names(statement)
        if index in keep:
            statements.append(statement)
            for name in bound:
                mapping.pop(name, None)
            continue
        for name, value in bound.items():
            replacement = _first_operand(value, modules) if value is not None else None
            if replacement is not None and not (isinstance(replacement, cst.Name)
                                                and replacement.value == name):
                mapping[name] = replacement
            else:
                mapping.pop(name, None)
    if not statements and isinstance(target, cst.IndentedBlock):
        statements = [cst.SimpleStatementLine([cst.Pass()])]
    elif isinstance(target, cst.IndentedBlock) and isinstance(
            statements[0], cst.SimpleStatementLine | cst.BaseCompoundStatement) and all(
            line.comment is None for line in statements[0].leading_lines):
        statements[0] = statements[0].with_changes(leading_lines=())  # no blank first line
    return module.visit(Replace({id(target): target.with_changes(body=statements)})).code


def _bound_names(statement: cst.CSTNode) -> dict[str, cst.BaseExpression | None]:
    """Names a statement assigns (outside nested functions), each with the value assigned
    first (None for names bound otherwise: loops, ``with``, ``def``)."""
    collector = _Assignments()
    statement.visit(collector)
    return collector.bound


class _Assignments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.bound: dict[str, cst.BaseExpression | None] = {}

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.bound.setdefault(target.value, value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._bind(element.value, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.setdefault(node.name.value, None)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.setdefault(node.name.value, None)
        return False


class _FirstOperand(cst.CSTVisitor):
    """The first value an expression reads, in source order: a local name or ``self.x``."""

    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.found: cst.BaseExpression | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None or isinstance(node, cst.Lambda):
            return False
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and (
                node.value.value == "self"):
            self.found = node
            return False
        if isinstance(node, cst.Name) and node.value not in self.modules | BUILTINS | {
                "self", "None", "True", "False"}:
            self.found = node
            return False
        if isinstance(node, cst.Attribute):
            node.value.visit(self)  # never the attribute's own name
            return False
        if isinstance(node, cst.Arg):
            if node.keyword is None:  # keyword arguments are options (generator=g)
                node.value.visit(self)
            return False
        if isinstance(node, cst.Call) and not isinstance(node.func, cst.Attribute):
            for arg in node.args:  # a called name is a function, not a value
                arg.visit(self)
            return False
        return True


def _first_operand(node: cst.CSTNode, modules: frozenset[str]) -> cst.BaseExpression | None:
    visitor = _FirstOperand(modules)
    node.visit(visitor)
    return visitor.found


class _Rename(cst.CSTTransformer):
    """Replace loads of the mapped names (not keyword names, not assignment targets)."""

    def __init__(self, mapping: dict[str, cst.BaseExpression],
                 contexts: Mapping[cst.CSTNode, ExpressionContext | None]):
        self.mapping = mapping
        self.contexts = contexts
        self.keywords: set[int] = set()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keywords.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if (original.value in self.mapping and id(original) not in self.keywords
                and self.contexts.get(original) is ExpressionContext.LOAD):
            return self.mapping[original.value].deep_clone()
        return updated


# -- compound statements ------------------------------------------------------------------------

class _Compounds(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[cst.BaseCompoundStatement, list[list[cst.BaseStatement]]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        blocks = _blocks(node)
        if blocks and isinstance(node, cst.BaseCompoundStatement):  # only those have blocks
            self.found.append((node, blocks))
        return True


def _blocks(node: cst.CSTNode) -> list[list[cst.BaseStatement]]:
    """The statement sequences a compound statement could be replaced by."""
    if isinstance(node, cst.If):
        blocks = [list(node.body.body)] if isinstance(node.body, cst.IndentedBlock) else []
        if isinstance(node.orelse, cst.Else) and isinstance(node.orelse.body, cst.IndentedBlock):
            blocks.append(list(node.orelse.body.body))
        elif isinstance(node.orelse, cst.If):
            blocks.append([node.orelse])
        return blocks
    if isinstance(node, cst.While | cst.For | cst.With | cst.Try) and isinstance(
            node.body, cst.IndentedBlock):
        return [list(node.body.body)]
    return []


def break_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each ``if`` from ``start`` on replaced by
    ``torch._dynamo.graph_break()`` and one of its blocks. A data-dependent ``if`` splits
    the compiled program in two graphs; when the finding needs the split but not the test,
    plain hoisting loses it and this keeps it (the call does nothing eagerly)."""
    module = parse(text)
    if "torch" not in module_names(module):
        return
    visitor = _Compounds()
    module.visit(visitor)
    split = cst.parse_statement("torch._dynamo.graph_break()\n")
    found = [(node, [[split.with_changes(leading_lines=node.leading_lines), *block]
                     for block in blocks])
             for node, blocks in visitor.found if isinstance(node, cst.If)]
    yield from flattened(module, found, start)


def hoist_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each compound statement from ``start`` on replaced by one of its
    blocks (an ``if`` by its body or its ``else``, a loop, ``with`` or ``try`` by its body)."""
    module = parse(text)
    visitor = _Compounds()
    module.visit(visitor)
    yield from flattened(module, visitor.found, start)


# -- temporaries --------------------------------------------------------------------------------

def _inlined(statement: cst.BaseStatement) -> dict[str, cst.BaseExpression] | None:
    """The values ``name = value`` (or ``a, b = x, y``: each name its item) binds, each
    parenthesised where it will replace a name; None for any other statement."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    target, value = assign.targets[0].target, assign.value
    pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [(target, value)]
    if isinstance(target, cst.Tuple | cst.List):
        if not (isinstance(value, cst.Tuple | cst.List)
                and len(value.elements) == len(target.elements)
                and all(isinstance(e, cst.Element) for e in (*value.elements,
                                                             *target.elements))):
            return None
        pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    if not all(isinstance(name, cst.Name) for name, _ in pairs):
        return None
    return {name.value: in_place_of(name, v) for name, v in pairs
            if isinstance(name, cst.Name)}


class _Inline(_Rename):
    """``_Rename`` that writes a value standing alone as an argument without the
    parentheses it carries for other places (``f(x + 1)``, not ``f((x + 1))``)."""

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        value = updated.value
        if (isinstance(original.value, cst.Name) and original.value.value in self.mapping
                and value is not original.value and value.lpar
                and not isinstance(value, cst.Tuple | cst.GeneratorExp)):  # parens of its own
            return updated.with_changes(value=value.with_changes(lpar=[], rpar=[]))
        return updated


def inline_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each assignment to names (``fn = partial(f, k=1)``, ``key, fn =
    (0, g)``) from ``start`` on removed, its values written where the statements after it in
    its block read its names (``y = fn(x)`` becomes ``y = partial(f, k=1)(x)``). The
    statement pass replaces a removed name by one operand of its value, which cannot stand
    for a callable."""
    module, contexts, _ = analysed(text)
    position = 0
    for body in statement_lists(module):
        for index, statement in enumerate(body.body):
            values = _inlined(statement)
            if values is None:
                continue
            if position >= start:
                rest: list[cst.BaseStatement] = []
                for later in body.body[index + 1:]:
                    if values:
                        renamed = later.visit(_Inline(values, contexts))
                        assert isinstance(renamed, cst.BaseStatement)  # names replaced only
                        later = renamed
                    values = {n: v for n, v in values.items() if n not in _bound_names(later)}
                    rest.append(later)
                kept = [*body.body[:index], *rest] or (
                    [cst.SimpleStatementLine([cst.Pass()])]
                    if isinstance(body, cst.IndentedBlock) else [])
                yield position, module.visit(
                    Replace({id(body): body.with_changes(body=kept)})).code
            position += 1
