"""Smaller variants of one program's source text: the candidates the minimiser tries.

Every function here takes source text and returns source text (or yields candidates in a
fixed order), through libcst so the rest of the file keeps its formatting. Nothing runs the
code: the minimiser judges each candidate in its checking process and keeps it only when the
oracle's verdict and the finding's signature stay the same. Each kind of candidate makes the
program strictly smaller in its own measure (fewer statements or tokens, a simpler literal,
smaller input dimensions), so repeating them always ends.

- statements: ``keep_statements`` keeps a subset of one statement list (for delta debugging);
  the names a removed assignment bound are replaced, in the statements after it, by the
  first value it read (``v2 = v1.tanh()`` removed: later ``v2`` become ``v1``);
- ``unused_input_candidates``: a parameter of the program's ``forward`` (or ``__init__``)
  that its body never reads removed, with the item of the literal list ``get_inputs()``
  (``get_init_inputs()``) returns at its position;
- ``unused_member_candidates``: a member ``__init__`` sets (``self.NAME = ...``,
  ``self.register_buffer("NAME", ...)``) that nothing else in the module names, removed;
- ``unroll_candidates``: a loop that runs its body once (``range(1)``, ``range(0, 1)``, a
  one-item list or tuple; no ``break``, ``continue`` or ``else``) replaced by
  ``v = <value>`` and its body;
- ``inline_candidates``: an assignment to names removed, its values written where later
  statements of its block read them (a callable held in a temporary);
- ``iteration_candidates``: a loop over a literal list, tuple or dict (the generator's dicts
  of callables) replaced by one of its iterations;
- ``hoist_candidates``: a compound statement replaced by one of its blocks;
- ``break_candidates``: an ``if`` replaced by ``torch._dynamo.graph_break()`` and one of its
  blocks (a finding that needs the graph split a data-dependent ``if`` makes, not its test);
- ``expression_candidates``: a subexpression replaced by one of its operands (a call by its
  receiver or an argument, ``a * b`` by ``a`` or ``b``, ``x[i]`` by ``x``), an argument
  dropped, an item of a returned tuple or dict replaced by ``None`` (which keeps the
  positions of the outputs, and so the finding's path);
- ``constant_candidates``: a number replaced by a simpler one (0, 1, 2, half);
- ``shape_candidates``: dimensions of tensors made by factories (``torch.randn(4, 8)``)
  shrunk, everywhere at once or one at a time, and items of ``torch.tensor([...])`` lists
  removed;
- ``literal_inputs``: ``get_inputs()`` returning literals of the inputs it built (the
  checking process writes them: ``torch.tensor([[0.5, -1.0]])``), not what it computed;
- ``tidy``: parentheses around atoms that replaced operands brought along, removed (judged
  like any candidate, once at the end).
"""

from __future__ import annotations

import ast
import builtins
import functools
import io
import re
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst
from libcst import CSTNodeT
from libcst.helpers import get_full_name_for_node, get_full_name_for_node_or_raise
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper

# Factories whose leading integer arguments (or first tuple, or ``size=``) are a shape.
_SIZED = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint", "eye",
                    "arange", "randperm"})
_LISTED = frozenset({"tensor", "as_tensor"})  # factories from nested list literals
# The functions whose returned lists are the target's inputs, not outputs.
INPUT_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs"})
_BUILTINS = frozenset(dir(builtins))
_Item = TypeVar("_Item", cst.Param, cst.BaseElement)  # what a comma separates
_NOT_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                         tokenize.ENDMARKER, tokenize.COMMENT})


@dataclass(frozen=True)
class Size:
    """How big a program is: statements (ast), tokens (without layout and comments)."""

    statements: int
    tokens: int


def size(text: str) -> Size:
    """The statement and token counts of ``text``."""
    statements = sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(text)))
    tokens = sum(t.type not in _NOT_TOKENS
                 for t in tokenize.generate_tokens(io.StringIO(text).readline))
    return Size(statements, tokens)


# -- names --------------------------------------------------------------------------------------


# A pass asks for candidates of one program many times (each subset of delta debugging, each
# expression), and libcst trees are immutable: the program's tree, its expression contexts
# and its statement lists are made once and shared (nodes keep their identity, which
# ``_Replace`` matches on).
@functools.lru_cache(maxsize=8)
def _parse(text: str) -> cst.Module:
    return cst.parse_module(text)


@functools.lru_cache(maxsize=4)
def _analysed(text: str) -> tuple[cst.Module, Mapping[cst.CSTNode, ExpressionContext],
                                  list[cst.Module | cst.IndentedBlock]]:
    """The tree of ``text``, the expression context (load, store, del) of its nodes and its
    statement lists (see ``_bodies``), all of one tree."""
    wrapper = MetadataWrapper(_parse(text), unsafe_skip_copy=True)
    return wrapper.module, wrapper.resolve(ExpressionContextProvider), _bodies(wrapper.module)


def _module_names(module: cst.Module) -> frozenset[str]:
    """Names bound at module level by imports, ``def`` and ``class``: never operands."""
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
                        small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname else alias.name
                        names.add(get_full_name_for_node_or_raise(bound).split(".")[0])
    return frozenset(names)


def _is_module_ref(node: cst.BaseExpression, modules: frozenset[str]) -> bool:
    """``torch``, ``torch.nn``, ``F``: a module (or class) name, not a value."""
    name = get_full_name_for_node(node) if isinstance(node, cst.Name | cst.Attribute) else None
    return name is not None and name.split(".")[0] in modules | _BUILTINS


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString
                  | cst.ConcatenatedString | cst.FormattedString):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, cst.Tuple | cst.List):
        return all(_is_literal(e.value) for e in node.elements)
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
        if isinstance(node, cst.Name) and node.value not in self.modules | _BUILTINS | {
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


# -- statements ---------------------------------------------------------------------------------


class _Bodies(cst.CSTVisitor):
    """Statement lists in pre-order: the module's, then every indented block."""

    def __init__(self) -> None:
        self.found: list[cst.Module | cst.IndentedBlock] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.found.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.found.append(node)


def _bodies(module: cst.Module) -> list[cst.Module | cst.IndentedBlock]:
    visitor = _Bodies()
    module.visit(visitor)
    return visitor.found


def body_lengths(text: str) -> list[int]:
    """How many statements each statement list of ``text`` holds, in pre-order."""
    return [len(body.body) for body in _analysed(text)[2]]


def keep_statements(text: str, body: int, keep: frozenset[int]) -> str:
    """``text`` with only the statements ``keep`` (indices) of statement list ``body``; names
    that removed statements bound are replaced in later statements of the list by the first
    value each read. An emptied block gets ``pass``."""
    module, contexts, bodies = _analysed(text)
    target = bodies[body]
    modules = _module_names(module)
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
    return module.visit(_Replace({id(target): target.with_changes(body=statements)})).code


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


class _Replace(cst.CSTTransformer):
    """Replace nodes by identity (the original tree's nodes) with new nodes or statements."""

    def __init__(self,
                 replacements: dict[int, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]]):
        self.replacements = replacements

    # libcst types on_leave as keeping each node's type; a replacement by identity may be
    # another kind of node (a block's statements for an ``if``), which the parent accepts.
    def on_leave(  # type: ignore[override]
            self, original: cst.CSTNode, updated: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        return self.replacements.get(id(original), updated)


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
    module = _parse(text)
    if "torch" not in _module_names(module):
        return
    visitor = _Compounds()
    module.visit(visitor)
    split = cst.parse_statement("torch._dynamo.graph_break()\n")
    found = [(node, [[split.with_changes(leading_lines=node.leading_lines), *block]
                     for block in blocks])
             for node, blocks in visitor.found if isinstance(node, cst.If)]
    yield from _flattened(module, found, start)


def hoist_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each compound statement from ``start`` on replaced by one of its
    blocks (an ``if`` by its body or its ``else``, a loop, ``with`` or ``try`` by its body)."""
    module = _parse(text)
    visitor = _Compounds()
    module.visit(visitor)
    yield from _flattened(module, visitor.found, start)


def _flattened(module: cst.Module,
               found: Sequence[tuple[cst.CSTNode, Sequence[list[cst.BaseStatement]]]],
               start: int) -> Iterator[tuple[int, str]]:
    """``(position, text)`` for each found statement from ``start`` on, replaced in turn by
    each of its candidate statement lists."""
    for position, (node, replacements) in enumerate(found):
        if position < start:
            continue
        for statements in replacements:
            yield position, module.visit(
                _Replace({id(node): cst.FlattenSentinel(statements)})).code


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
    return {name.value: _in_place_of(name, v) for name, v in pairs
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
    module, contexts, _ = _analysed(text)
    position = 0
    for body in _bodies(module):
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
                    _Replace({id(body): body.with_changes(body=kept)})).code
            position += 1


# -- loops of one pass --------------------------------------------------------------------------


def _one_value(iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """The one value a loop over ``iterable`` binds: ``range(1)`` and ``range(0, 1)`` (any
    ``range(a, a + 1)`` of integer literals), a one-item list or tuple literal; else None."""
    if isinstance(iterable, cst.List | cst.Tuple):
        if len(iterable.elements) == 1 and isinstance(iterable.elements[0], cst.Element):
            return iterable.elements[0].value
        return None
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
            and iterable.func.value == "range") or any(
            arg.keyword is not None or arg.star for arg in iterable.args):
        return None
    bounds = [_number(arg.value) for arg in iterable.args]
    if not all(isinstance(b, int) for b in bounds):
        return None
    if len(bounds) == 1 and bounds[0] == 1:
        return cst.Integer("0")
    if len(bounds) == 2 and bounds[0] is not None and bounds[1] == bounds[0] + 1:
        return iterable.args[0].value
    return None


class _Escapes(cst.CSTVisitor):
    """Whether a loop's body breaks out of or continues that loop (not a nested one)."""

    def __init__(self) -> None:
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Break | cst.Continue):
            self.found = True
        if isinstance(node, cst.For | cst.While):  # a nested loop's ``else`` is still ours
            if node.orelse is not None:
                node.orelse.visit(self)
            return False
        return not self.found and not isinstance(
            node, cst.FunctionDef | cst.ClassDef | cst.Lambda)


def _unrolled(loop: cst.For) -> list[cst.BaseStatement] | None:
    """``v = <value>`` and the loop's body, for a loop that runs its body exactly once."""
    if loop.orelse is not None or loop.asynchronous is not None:
        return None
    value = _one_value(loop.iter)
    if value is None:
        return None
    escapes = _Escapes()
    for statement in loop.body.body:
        statement.visit(escapes)
    if escapes.found:
        return None
    bind = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(loop.target)], value)],
                                   leading_lines=loop.leading_lines)
    body: list[cst.BaseStatement]
    if isinstance(loop.body, cst.IndentedBlock):
        body = list(loop.body.body)
    else:  # ``for v in range(1): x += v``
        assert isinstance(loop.body, cst.SimpleStatementSuite)  # a loop's only other suite
        small = list(loop.body.body)
        small[-1] = small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        body = [cst.SimpleStatementLine(small)]
    if body and all(line.comment is None for line in getattr(body[0], "leading_lines", ())):
        body[0] = body[0].with_changes(leading_lines=())
    return [bind, *body]


class _Loops(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[cst.For, list[cst.BaseStatement]]] = []

    def visit_For(self, node: cst.For) -> None:
        unrolled = _unrolled(node)
        if unrolled is not None:
            self.found.append((node, unrolled))


class _Literals(cst.CSTVisitor):
    """Names assigned exactly once, by ``name = <list, tuple or dict literal>``."""

    def __init__(self) -> None:
        self.values: dict[str, cst.BaseExpression | None] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                literal = isinstance(node.value, cst.List | cst.Tuple | cst.Dict)
                self.values[name] = (node.value if literal and name not in self.values
                                     else None)


def _iterations(iterable: cst.BaseExpression, literals: Mapping[str, cst.BaseExpression | None]
                ) -> list[cst.BaseExpression]:
    """The values a loop over ``iterable`` binds, in order, when it iterates a literal list,
    tuple or dict (or its ``.items()``, ``.keys()``, ``.values()``), directly or through a
    name assigned that literal once; [] when it does not."""
    method = None
    if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            and not iterable.args and iterable.func.attr.value in ("items", "keys", "values")):
        method, iterable = iterable.func.attr.value, iterable.func.value
    if isinstance(iterable, cst.Name):
        iterable = literals.get(iterable.value) or iterable
    if isinstance(iterable, cst.Dict):
        pairs = [(e.key, e.value) for e in iterable.elements if isinstance(e, cst.DictElement)]
        if len(pairs) != len(iterable.elements):
            return []
        if method == "items":
            return [cst.Tuple([cst.Element(k), cst.Element(v)]) for k, v in pairs]
        return [v for _, v in pairs] if method == "values" else [k for k, _ in pairs]
    if method is None and isinstance(iterable, cst.List | cst.Tuple) and all(
            isinstance(e, cst.Element) for e in iterable.elements):
        return [e.value for e in iterable.elements]
    return []


class _LiteralLoops(cst.CSTVisitor):
    def __init__(self, literals: Mapping[str, cst.BaseExpression | None]) -> None:
        self.literals = literals
        self.found: list[tuple[cst.For, list[list[cst.BaseStatement]]]] = []

    def visit_For(self, node: cst.For) -> None:
        values = _iterations(node.iter, self.literals)
        if len(values) < 2 or _unrolled(node) is not None:
            return
        once = [_unrolled(node.with_changes(iter=cst.List([cst.Element(v)]))) for v in values]
        self.found.append((node, [body for body in once if body is not None]))


def unroll_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each loop from ``start`` on that runs its body once (over
    ``range(1)``, ``range(0, 1)`` or a one-item list or tuple, with no ``break``,
    ``continue`` or ``else``) replaced by ``v = <the value>`` and its body."""
    module = _parse(text)
    visitor = _Loops()
    module.visit(visitor)
    yield from _flattened(module, [(node, [body]) for node, body in visitor.found], start)


def iteration_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each loop from ``start`` on over a literal list, tuple or dict
    (or its ``items()``/``keys()``/``values()``, directly or through a name assigned it once;
    the generator's dicts of callables) replaced by one of its iterations: ``v = <item>``
    and its body, for each item in turn."""
    module = _parse(text)
    literals = _Literals()
    module.visit(literals)
    visitor = _LiteralLoops(literals.values)
    module.visit(visitor)
    yield from _flattened(module, visitor.found, start)


# -- unused inputs and members ------------------------------------------------------------------

# Builtins that read a function's variables by name: any parameter may be read through them.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})


def _function(body: cst.BaseSuite | cst.Module, name: str) -> cst.FunctionDef | None:
    """The function ``name`` defined directly in a module's or class's body (the last one)."""
    statements = body.body if isinstance(body, cst.Module | cst.IndentedBlock) else ()
    found = None
    for statement in statements:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            found = statement
    return found


def _target_class(module: cst.Module) -> cst.ClassDef | None:
    """The program's module: the one top-level class with a ``forward``, or else the one
    such class that no other code of the module names (the others are its submodules)."""
    classes = [s for s in module.body if isinstance(s, cst.ClassDef)
               and _function(s.body, "forward") is not None]
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
        signatures = [(_function(target.body, "forward"), "get_inputs", 1),
                      (_function(target.body, "__init__"), "get_init_inputs", 1)]
    else:  # a functional program: its one top-level function, called with get_inputs()
        signatures = [(_target_function(module), "get_inputs", 0)]
    sites = []
    for function, provider, first in signatures:
        returned = _returned_items(_function(module, provider))
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
    module = _parse(text)
    for position, replacements in enumerate(_input_sites(module)):
        if position >= start:
            yield position, module.visit(_Replace(replacements)).code


def _target_callable(module: cst.Module) -> cst.FunctionDef | None:
    """What the oracle calls: the target class's ``forward``, or a functional program's
    function."""
    target = _target_class(module)
    if target is not None:
        return _function(target.body, "forward")
    return _target_function(module)


def output_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: the program returning its tuple (or list) without the item at each
    position from ``start`` on (one item left: that item alone). An output the verdict does
    not read (``return None, None, v3`` where only ``v3`` differs) goes; the judge keeps the
    candidate only if the verdict and signature stay."""
    module = _parse(text)
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
        yield index, module.visit(_Replace({id(found): replaced})).code


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
        init = _function(cls.body, "__init__")
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
    module = _parse(text)
    for position, removed in enumerate(_member_sites(module)):
        if position >= start:
            yield position, _emptied(module, removed).code


# -- expressions --------------------------------------------------------------------------------


class _Expressions(cst.CSTVisitor):
    """Expressions with smaller replacements, in pre-order (outermost first). Assignment
    targets, annotations, decorators, imports and class bases are left alone."""

    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.skip: set[int] = set()    # not visited at all
        self.inert: set[int] = set()   # visited, but not replaced (a call's function)
        self.found: list[tuple[cst.BaseExpression, list[cst.BaseExpression]]] = []
        self.functions: list[str] = []  # the enclosing functions' names

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, cst.FunctionDef):
            self.functions.pop()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip or isinstance(node, cst.Annotation | cst.Decorator | cst.Import
                                               | cst.ImportFrom | cst.AssignTarget):
            return False
        if isinstance(node, cst.AugAssign | cst.For | cst.CompFor | cst.WithItem):
            self.skip.add(id(getattr(node, "target", None) or getattr(node, "asname", None)))
        if isinstance(node, cst.ClassDef):
            self.skip.update(id(arg) for arg in (*node.bases, *node.keywords))
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node.name.value)
        if isinstance(node, cst.Return) and node.value is not None and not (
                self.functions and self.functions[-1] in INPUT_FUNCTIONS):
            self._returned(node.value)
        if isinstance(node, cst.Call):
            self.inert.add(id(node.func))
        if isinstance(node, cst.BaseExpression) and id(node) not in self.inert:
            smaller = _smaller(node, self.modules)
            if smaller:
                self.found.append((node, smaller))
        return True

    def _returned(self, value: cst.BaseExpression) -> None:
        """Items of a returned tuple, list or dict may become ``None``: the outputs keep
        their positions (and a finding its path) while their computations can go."""
        none = cst.Name("None")
        if isinstance(value, cst.Tuple | cst.List):
            for element in value.elements:
                if not _is_literal(element.value):
                    self.found.append((element.value, [none]))
        elif isinstance(value, cst.Dict):
            for item in value.elements:
                if isinstance(item, cst.DictElement) and not _is_literal(item.value):
                    self.found.append((item.value, [none]))


def _smaller(node: cst.BaseExpression, modules: frozenset[str]) -> list[cst.BaseExpression]:
    """Replacements for ``node``: its operands (not literals), then calls with an argument
    dropped."""
    operands: list[cst.BaseExpression] = []
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and not _is_module_ref(func.value, modules) and not (
                isinstance(func.value, cst.Call) and get_full_name_for_node(
                    func.value.func) == "super"):
            operands.append(func.value)
        # Positional arguments only: keyword arguments are options (dtype=, generator=).
        operands += [arg.value for arg in node.args if not arg.star and arg.keyword is None]
    elif isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
        operands = [node.left, node.right]
    elif isinstance(node, cst.UnaryOperation):
        operands = [node.expression]
    elif isinstance(node, cst.Comparison):
        operands = [node.left]
    elif isinstance(node, cst.Subscript):
        operands = [node.value]
    elif isinstance(node, cst.IfExp):
        operands = [node.body, node.orelse]
    elif isinstance(node, cst.Attribute) and not _is_module_ref(node, modules) and not (
            isinstance(node.value, cst.Name) and node.value.value == "self"):
        operands = [node.value]
    smaller = [_in_place_of(node, o) for o in operands
               if not _is_literal(o) and not _is_module_ref(o, modules)]
    if isinstance(node, cst.Call):
        smaller += _dropped_arguments(node)
    return smaller


def _dropped_arguments(call: cst.Call) -> list[cst.Call]:
    """The call without one keyword argument, or without its last positional one."""
    if any(arg.star for arg in call.args):
        return []
    positional = [i for i, arg in enumerate(call.args) if arg.keyword is None]
    drops = [i for i, arg in enumerate(call.args) if arg.keyword is not None]
    drops += positional[-1:] if len(positional) >= 2 else []
    made = []
    for drop in drops:
        args = [arg for i, arg in enumerate(call.args) if i != drop]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        made.append(call.with_changes(args=args))
    return made


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString, cst.List, cst.Dict, cst.Tuple)


def _in_place_of(node: cst.BaseExpression, operand: cst.BaseExpression) -> cst.BaseExpression:
    """``operand`` standing where ``node`` stood: with ``node``'s parentheses, or its own, or
    new ones when it could bind more loosely than its new surroundings."""
    if operand.lpar:
        return operand
    if node.lpar:
        return operand.with_changes(lpar=node.lpar, rpar=node.rpar)
    if isinstance(operand, _ATOMS) and not isinstance(operand, cst.Tuple):
        return operand
    return operand.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def expression_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each expression from ``start`` on replaced by each of its
    smaller forms, outermost expressions first."""
    module = _parse(text)
    visitor = _Expressions(_module_names(module))
    module.visit(visitor)
    for position, (node, smaller) in enumerate(visitor.found):
        if position < start:
            continue
        for replacement in smaller:
            yield position, module.visit(_Replace({id(node): replacement})).code


# -- constants ----------------------------------------------------------------------------------


class _Numbers(cst.CSTVisitor):
    """Number literals outside factory shapes (those are the shape pass's); ``-3`` is one
    number, so it can become ``0`` rather than ``-0``."""

    def __init__(self, shapes: set[int]):
        self.shapes = shapes
        self.found: list[cst.BaseExpression] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Decorator | cst.Import | cst.ImportFrom | cst.Annotation):
            return False
        if isinstance(node, cst.BaseExpression) and _number(node) is not None and id(
                node) not in self.shapes and not (
                isinstance(node, cst.UnaryOperation) and id(node.expression) in self.shapes):
            self.found.append(node)
            return False
        return True


def _number(node: cst.CSTNode) -> int | float | None:
    """The value of an integer or float literal, or of a negated one."""
    if isinstance(node, cst.Integer | cst.Float):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and (
            isinstance(node.expression, cst.Integer | cst.Float)):
        return -node.expression.evaluated_value
    return None


def _simpler_numbers(node: cst.BaseExpression) -> list[str]:
    """Simpler literals for ``node``, simplest first: shorter, or as long and smaller."""
    value = _number(node)
    assert value is not None  # _Numbers collects number literals only
    if isinstance(value, int):
        options = [str(v) for v in (0, 1, -1, 2, -2, value // 2, -(abs(value) // 2))]
    else:
        options = [repr(v) for v in (0.0, 1.0, -1.0, float(round(value)), round(value, 1))
                   if v == v and abs(v) != float("inf")]
    current = (len(cst.Module([]).code_for_node(node)), abs(value))
    made = []
    for text in options:
        key = (len(text), abs(float(text)))
        if key < current and text not in made:
            made.append(text)
    return sorted(made, key=lambda t: (len(t), abs(float(t))))


def constant_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, text)``: each number from ``start`` on replaced by simpler ones."""
    module = _parse(text)
    visitor = _Numbers({id(n) for n in _shape_sites(module)[0]})
    module.visit(visitor)
    for position, node in enumerate(visitor.found):
        if position < start:
            continue
        for simpler in _simpler_numbers(node):
            replacement = cst.parse_expression(simpler).with_changes(
                lpar=node.lpar, rpar=node.rpar)
            yield position, module.visit(_Replace({id(node): replacement})).code


# -- input shapes -------------------------------------------------------------------------------


class _Factories(cst.CSTVisitor):
    def __init__(self, modules: frozenset[str]):
        self.modules = modules
        self.dims: list[cst.Integer] = []
        self.lists: list[cst.List] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = get_full_name_for_node(node.func) or ""
        head, _, last = name.rpartition(".")
        if not (head and head.split(".")[0] in self.modules):
            return
        if last in _SIZED:
            self.dims += _dims(node)
        elif last in _LISTED and node.args and isinstance(node.args[0].value, cst.List):
            self.lists.append(node.args[0].value)


def _dims(call: cst.Call) -> list[cst.Integer]:
    """The integer literals that give a factory call's shape."""
    sized = [arg.value for arg in call.args if arg.keyword is not None
             and arg.keyword.value == "size"]
    sized += [arg.value for arg in call.args if arg.keyword is None
              and isinstance(arg.value, cst.Tuple | cst.List)][:1]
    if sized:
        value = sized[0]
        elements = value.elements if isinstance(value, cst.Tuple | cst.List) else []
        return [e.value for e in elements if isinstance(e.value, cst.Integer)]
    leading = []
    for arg in call.args:
        if arg.keyword is not None or not isinstance(arg.value, cst.Integer):
            break
        leading.append(arg.value)
    return leading


def _shape_sites(module: cst.Module) -> tuple[list[cst.Integer], list[cst.List]]:
    visitor = _Factories(_module_names(module))
    module.visit(visitor)
    return visitor.dims, visitor.lists


def _shrunk(value: int) -> list[int]:
    return sorted({v for v in (1, value // 2, value - 1) if 1 <= v < value})


def shape_candidates(text: str) -> Iterator[str]:
    """Factory dimensions shrunk (each value everywhere at once, largest first, then one site
    at a time) and items of ``torch.tensor`` lists removed."""
    module = _parse(text)
    dims, lists = _shape_sites(module)
    values = sorted({d.evaluated_value for d in dims}, reverse=True)
    for value in values:
        sites = [d for d in dims if d.evaluated_value == value]
        for smaller in _shrunk(value):
            yield module.visit(_Replace({id(d): d.with_changes(value=str(smaller))
                                         for d in sites})).code
    if len(dims) > 1:
        for site in dims:
            for smaller in _shrunk(site.evaluated_value):
                yield module.visit(_Replace({id(site): site.with_changes(
                    value=str(smaller))})).code
    for listed in lists:
        for drop in range(len(listed.elements) if len(listed.elements) > 1 else 0):
            elements = [e for i, e in enumerate(listed.elements) if i != drop]
            elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            yield module.visit(_Replace({id(listed): listed.with_changes(
                elements=elements)})).code


# -- literal inputs -----------------------------------------------------------------------------

_TORCH = re.compile(r"\btorch\.")


def literal_inputs(text: str, literals: Sequence[str], as_tuple: bool = False) -> str | None:
    """``text`` with ``get_inputs()`` returning ``literals`` (source text naming the torch
    module ``torch``, as the checking process writes the inputs it built) in a list (or a
    tuple), instead of what it computed; None when the program has no ``get_inputs()`` or
    does not import torch under a name of its own."""
    module = _parse(text)
    function = _function(module, "get_inputs")
    torch = _torch_name(module)
    if function is None or torch is None:
        return None
    items = [_TORCH.sub(f"{torch}.", literal) for literal in literals]
    inside = ", ".join(items) + ("," if as_tuple and len(items) == 1 else "")
    returned = f"({inside})" if as_tuple else f"[{inside}]"
    if len(returned) > 80 and len(items) > 1:  # one input a line (libcst adds the block's
        inside = "".join(f"\n    {item}," for item in items)  # indentation to each)
        returned = ("(" if as_tuple else "[") + inside + "\n" + (")" if as_tuple else "]")
    statement = cst.parse_statement(f"return {returned}\n")
    body = function.body.with_changes(body=[statement]) if isinstance(
        function.body, cst.IndentedBlock) else cst.IndentedBlock(body=[statement])
    return module.visit(_Replace({id(function): function.with_changes(body=body)})).code


def _torch_name(module: cst.Module) -> str | None:
    """The name the module imports torch itself under (``import torch [as th]``)."""
    found = None
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if get_full_name_for_node(alias.name) == "torch":
                        found = alias.asname.name.value if alias.asname and isinstance(
                            alias.asname.name, cst.Name) else "torch"
    return found


# -- tidying ------------------------------------------------------------------------------------


class _Unparenthesise(cst.CSTTransformer):
    """Parentheses around names, attributes, calls, subscripts and literals, which replaced
    operands keep from their old place (``(v / (step))``), are removed: never needed."""

    def on_leave(self, original: CSTNodeT, updated: CSTNodeT
                 ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        # Tested apart from the ``if``, which then does not narrow ``updated`` away from its
        # own type: with_changes keeps it.
        atom = isinstance(updated, _ATOMS) and not isinstance(updated, cst.Tuple)
        if atom and getattr(updated, "lpar", None):
            return updated.with_changes(lpar=[], rpar=[])
        return updated


def tidy(text: str) -> str:
    """``text`` without parentheses around atoms."""
    return _parse(text).visit(_Unparenthesise()).code
